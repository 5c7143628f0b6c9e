"""Cluster timing benchmark: the numbers the cluster-core issue promises, measured.

    .venv/bin/python bench/cluster_timing.py [--repeat 3]

Reports, for the quickstart topology at timing.scale 0.01:
- time from `Launcher.start()` to every broker registered on every namesrv;
- SIGKILL of a master -> `ns.broker change=channel_destroy` on the namesrv (host ms);
- a fault-free run's spurious `expired` / `channel_destroy` events (must be 0).
Timing goals live here, not in tests (tests poll with generous timeouts).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqemu.emulator.launcher.launcher import Launcher  # noqa: E402
from rmqemu.emulator.launcher.topology_load import load_topology  # noqa: E402
from rmqemu.emulator.node.clock import host_ms  # noqa: E402
from rmqemu.emulator.testing import read_events  # noqa: E402

TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies" / "quickstart.yaml"


def one_run(tmp: Path) -> dict[str, float]:
    topo = load_topology(TOPOLOGY).model_copy(update={"producers": [], "consumers": []})
    t0 = time.monotonic()
    with Launcher(topo, run_dir=tmp) as c:
        up_ms = (time.monotonic() - t0) * 1000
        c.pump(1000)  # a quiet second: 3 register periods, 10 scans
        spurious = [e for e in read_events(tmp, "ns.broker") if e["change"] in ("expired", "channel_destroy")]
        exit_ts = host_ms()
        c.signal("broker-b-0", signal.SIGKILL)
        c.node_exited("broker-b-0", signal.SIGKILL)
        addr = c.addrs["broker-b-0"]
        def gone(addr: str = addr) -> list[dict]:
            return read_events(tmp, "ns.broker",
                               where=lambda e: e["change"] == "channel_destroy" and e["broker_addr"] == addr)
        c.wait_for(gone, 30, "channel_destroy")
        destroy_ms = gone()[0]["ts"] - exit_ts
    return {"registered_ms": up_ms, "channel_destroy_after_kill_ms": destroy_ms, "spurious": len(spurious)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            rows.append(one_run(Path(d) / "run"))
            print(f"run {i + 1}: " + ", ".join(f"{k}={v:.1f}" for k, v in rows[-1].items()))
    for key in rows[0]:
        vals = [r[key] for r in rows]
        print(f"{key}: median {statistics.median(vals):.1f}, max {max(vals):.1f}")


if __name__ == "__main__":
    main()
