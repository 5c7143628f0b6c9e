"""DLedger failover benchmark: how long a killed leader's group is out of the route, and how long
producers keep sending to the dead master, over many seeds.

    .venv/bin/python bench/dledger_failover.py --seeds 20 [--scale 0.01] [--fault kill] [--json FILE]

Each seed launches one 3-peer DLedger group (``broker-a``), a namesrv, two producers at
``rate: 10`` (sync sends) and a consumer group, at ``timing.scale`` ``--scale``, and at 60 cluster
s kills (or pauses, or cuts off from its followers: ``--fault``) the group's leader as it is then.
From the run's events, in cluster seconds after the fault took effect:

- ``elected``: a peer's ``dledger.role`` LEADER of a newer term;
- ``in route``: the namesrv's ``ns.broker`` line putting the new master's address at brokerId 0
  (``register`` or ``role``): the route a client's next poll gets;
- ``last old send``: when the last send attempt any producer made to the old master's address
  left (none: 0); a producer stops at its 30 s route poll after the new master is in the route.

The seed moves the election's random backoffs; the producers' poll phase follows their start
(with the run), so at a large scale the last old send is about 30 s after a fault at 60 s.
Nothing here asserts: it prints each run and the distribution (min, median, 90th percentile,
max) beside the figures estimated from the code (docs/rocketmq-model.md §8; ``[est]``) and the
"about 10 seconds" of RocketMQ's own DLedger documentation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqemu.emulator.cli.launch import run_topology  # noqa: E402
from rmqemu.emulator.launcher.topology_load import parse_topology  # noqa: E402
from rmqemu.emulator.testing import read_events  # noqa: E402
from rmqemu.faults.launch_glue import build_plan  # noqa: E402

FAULTS = {
    "kill": {"kill": "leader:broker-a"},
    "pause": {"pause": "leader:broker-a", "duration": "60s"},
    "partition": {"partition": "leader-alone", "targets": "broker:broker-a", "duration": "60s"},
}
ESTIMATES = {"kill": {"in route": "5-8 [est]", "last old send": "35-38 [est]"},
             "pause": {"in route": "6-10 [est]"}, "partition": {"in route": "6-10 [est]"}}


def topology(seed: int, scale: float, fault: str) -> dict[str, Any]:
    return {
        "name": f"dledger-failover-{fault}-{seed}", "seed": seed, "timing": {"scale": scale}, "namesrvs": 1,
        "brokers": [{"name": "broker-a", "dledger": {"peers": 3}}],
        "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 4}],
        "producers": [{"group": "pg", "instances": 2, "topics": ["T"], "rate": 10, "mode": "sync"}],
        "consumers": [{"group": "cg", "subscribe": ["T"]}],
        "faults": [{"at": "60s", **FAULTS[fault]}],
        "duration": "150s",
    }


def measure(run_dir: Path, scale: float) -> dict[str, Any]:
    """The three delays of one run, in cluster s (None: it never happened within the run)."""
    start = next(e for e in read_events(run_dir, "fault.start") if e["fault"] in ("kill", "pause", "partition"))
    at, old = start["ts"], start["targets"][0] if start["fault"] != "partition" else None
    roles = read_events(run_dir, "dledger.role")
    if old is None:  # a group partition: the leader is the first of its side
        old = next(n for n in reversed([(e["ts"], e["node"]) for e in roles if e["role"] == "LEADER"])
                   if n[0] < at)[1]
    old_term = max(e["term"] for e in roles if e["node"] == old and e["role"] == "LEADER" and e["ts"] < at)
    addr = {e["node"]: e["addr"] for e in read_events(run_dir, "node.start")}
    elected = next((e for e in roles if e["role"] == "LEADER" and e["term"] > old_term and e["ts"] > at), None)
    new_addr = addr.get(elected["node"]) if elected else None
    routed = next((e["ts"] for e in read_events(run_dir, "ns.broker")
                   if e["ts"] > at and e["broker_id"] == 0 and e["change"] in ("register", "role")
                   and e["broker_addr"] == new_addr), None)
    old_sends = [e["ts"] - (e.get("latency_ms") or 0.0) for e in read_events(run_dir, "send")  # when it left
                 if e["ts"] > at and e.get("broker_addr") == addr[old]]

    def cluster_s(ts: float | None) -> float | None:
        return None if ts is None else round((ts - at) / 1000 / scale, 2)

    return {"elected": cluster_s(elected["ts"] if elected else None), "in route": cluster_s(routed),
            "last old send": cluster_s(max(old_sends)) if old_sends else 0.0, "old sends": len(old_sends)}


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    v = sorted(values)
    p90 = v[min(len(v) - 1, round(0.9 * (len(v) - 1)))]
    return f"{v[0]:.1f} / {statistics.median(v):.1f} / {p90:.1f} / {v[-1]:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--fault", choices=sorted(FAULTS), default="kill")
    ap.add_argument("--json", type=Path, default=None, help="write every run's figures here")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rmqemu-dledger-bench-") as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            topo = parse_topology(topology(seed, args.scale, args.fault), f"<bench seed {seed}>")
            t0 = time.monotonic()
            result = run_topology(topo, run_dir=Path(tmp) / f"s{seed}", plan=build_plan(topo), progress=False,
                                  log=lambda m: None)
            row = {"seed": seed, **measure(result.run_dir, args.scale), "wall_s": round(time.monotonic() - t0, 1)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\n{args.fault} of the leader, {len(rows)} seeds at scale {args.scale}: cluster s after the fault, "
          "min / median / p90 / max")
    for key in ("elected", "in route", "last old send"):
        got = [r[key] for r in rows if r[key] is not None]
        missing = len(rows) - len(got)
        est = ESTIMATES[args.fault].get(key, "")
        print(f"  {key:<14} {spread(got):<28} {est}" + (f"  ({missing} run(s) without)" if missing else ""))
    print("  RocketMQ's DLedger quick start (apache/rocketmq): a new master in 'about 10 seconds'")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
