"""Capacity benchmark: the largest cluster this host keeps healthy, and what a node costs.

    .venv/bin/python bench/capacity.py --scale 0.01 0.05 --brokers 4 8 11 14 [--wall 10]

The shape is the one of the timing issue, grown by its broker count ``b``: 2 namesrvs, ``b``
brokers each with one slave, topic ``T`` on every broker (4 queues), ``b`` producers at
``rate: 2`` and one consumer group of ``b - 2``: ``4 b`` nodes (56 at ``b = 14``). Each size is
launched fault-free with ``rmqemu launch`` for ``--wall`` wall seconds of measured run (the
cluster duration is ``wall / scale``), and measured from outside:

- ``cpu/node``: CPU of every node process (psutil, sampled every 0.25 s) between the launcher's
  ``run.start`` and ``run.stop``, per node, as a percentage of one core: the steady cost of a
  node, without the spawn and the shutdown;
- ``lateness``: the worst node's lateness (docs/design.md §9, the launcher's own LagWatch rule,
  windows from ``run.start`` on), against the threshold (5 % of the 10 s scan, scaled);
- ``failed``: send attempts whose outcome is not ``ok``, over all attempts.

A size is healthy when the lateness is below the threshold and under 0.5 % of sends failed.
Nothing here asserts: it prints one row per run (and ``--json`` writes them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqemu.emulator.launcher.lagwatch import LagWatch  # noqa: E402
from rmqemu.emulator.testing import read_events  # noqa: E402

FAILED_SENDS_OK = 0.005


def topology_yaml(brokers: int, scale: float, duration_s: float) -> str:
    names = [f"broker-{chr(ord('a') + i)}" if i < 26 else f"broker-{i}" for i in range(brokers)]
    lines = [f"name: cap{4 * brokers}", "seed: 3", f"timing: {{scale: {scale}}}", "namesrvs: 2", "brokers:"]
    lines += [f"  - {{name: {n}, slaves: 1}}" for n in names]
    lines += ["topics:", f"  - {{name: T, brokers: [{', '.join(names)}], queues: 4}}",
              "producers:", f"  - {{group: pg, instances: {brokers}, topics: [T], rate: 2}}",
              "consumers:", f"  - {{group: cg, instances: {max(1, brokers - 2)}, subscribe: [T]}}",
              f"duration: {duration_s:g}s"]
    return "\n".join(lines) + "\n"


def role_of(node: str) -> str:
    if node.startswith("namesrv"):
        return "namesrv"
    if node.startswith("broker-"):
        return "master" if node.endswith("-0") else "slave"
    return "producer" if node.startswith("pg") else "consumer"


class CpuSampler(threading.Thread):
    """Samples the summed CPU seconds of a process's descendants; a pid's last sample is kept
    after it exits, so nodes stopped at the end still count up to their last sample."""

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.every_s = every_s
        self.last: dict[int, float] = {}
        self.names: dict[int, str] = {}  # pid -> node name (the last argv word of python -m rmqemu.emulator.node)
        self.at_start: dict[int, float] = {}
        self.launcher_cpu = 0.0  # the launcher's own CPU seconds (the process it watches)
        self.samples: list[tuple[float, float]] = []  # (host ms, CPU s of all nodes so far)
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.is_set():
            try:
                for child in self.root.children(recursive=True):
                    try:
                        if child.pid not in self.names:
                            argv = child.cmdline()
                            if "rmqemu.emulator.node" not in argv:  # forked, not yet exec'd, or a zombie
                                continue  # (an empty argv used to end this thread: 0 % CPU rows)
                            self.names[child.pid] = argv[-1]
                        t = child.cpu_times()
                        self.last[child.pid] = t.user + t.system
                    except psutil.Error:
                        pass
            except psutil.Error:
                return
            try:
                t = self.root.cpu_times()
                self.launcher_cpu = t.user + t.system
            except psutil.Error:
                pass
            self.samples.append((time.time() * 1000, sum(self.last.values())))
            self.stop_flag.wait(self.every_s)

    def mark_start(self) -> None:
        """Remember each node's CPU now (call when the run starts) for :meth:`per_role`."""
        self.at_start = dict(self.last)

    def mark_stop(self) -> None:
        self.at_stop = dict(self.last)

    def per_role(self) -> dict[str, tuple[int, float]]:
        """Between :meth:`mark_start` and :meth:`mark_stop`: per role (namesrv, master, slave,
        producer, consumer), how many nodes and their CPU seconds."""
        out: dict[str, tuple[int, float]] = {}
        for pid, cpu in self.at_stop.items():
            role = role_of(self.names.get(pid, ""))
            count, total = out.get(role, (0, 0.0))
            out[role] = (count + 1, total + cpu - self.at_start.get(pid, cpu))
        return out

    def cpu_between(self, start_ms: float, end_ms: float) -> float:
        def at(ts: float) -> float:
            before = [cpu for t, cpu in self.samples if t <= ts]
            return before[-1] if before else 0.0
        return at(end_ms) - at(start_ms)


def measure(brokers: int, scale: float, wall_s: float, root: Path) -> dict[str, Any]:
    topo = root / f"cap-{brokers}-{scale:g}.yaml"
    topo.write_text(topology_yaml(brokers, scale, wall_s / scale), encoding="utf-8")
    run_dir = root / f"run-{brokers}-{scale:g}"
    t0 = time.monotonic()
    log = root / f"launch-{brokers}-{scale:g}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("rmqemu")), "launch", str(topo), "--run-dir",
                                 str(run_dir), "--no-progress"], stdout=out, stderr=subprocess.STDOUT, text=True)
    sampler = CpuSampler(proc.pid)
    sampler.start()
    marks_seen: set[str] = set()
    while proc.poll() is None:
        faults = run_dir / "faults.jsonl"
        text = faults.read_text() if faults.exists() else ""
        for mark, act in (('"run.start"', sampler.mark_start), ('"run.stop"', sampler.mark_stop)):
            if mark in text and mark not in marks_seen:
                marks_seen.add(mark)
                act()
        time.sleep(0.05)
    sampler.stop_flag.set()
    sampler.join()
    output = log.read_text()
    if proc.returncode != 0:
        raise SystemExit(f"launch of {topo} exited {proc.returncode}:\n{output}")
    marks = {e["kind"]: e["ts"] for e in read_events(run_dir, where=lambda e: e["kind"] in ("run.start", "run.stop"))}
    start, stop = marks["run.start"], marks["run.stop"]
    nodes = len(list((run_dir / "events").glob("*.jsonl")))
    watch = LagWatch(run_dir, scale, [], since_ms=start)
    watch.poll()
    lateness, worst = watch.worst
    sends = read_events(run_dir, "send")
    failed = sum(1 for e in sends if e["outcome"] != "ok")
    cpu = sampler.cpu_between(start, stop)
    row = {"brokers": brokers, "nodes": nodes, "scale": scale, "measured_s": round((stop - start) / 1000, 1),
           "launch_s": round(time.monotonic() - t0, 1),
           "cpu_per_node_pct": round(100 * cpu / nodes / ((stop - start) / 1000), 2),
           "cpu_cores": round(cpu / ((stop - start) / 1000), 2), "launcher_cpu_s": round(sampler.launcher_cpu, 2),
           "lateness_ms": round(lateness, 1), "worst_node": worst,
           "threshold_ms": watch.threshold_ms, "sends": len(sends), "failed": failed,
           "failed_pct": round(100 * failed / max(1, len(sends)), 2), "warned": "warning: the host" in output,
           "cpu_pct_by_role": {role: round(100 * cpu / count / ((stop - start) / 1000), 2)
                               for role, (count, cpu) in sorted(sampler.per_role().items())}}
    row["healthy"] = lateness < watch.threshold_ms and failed <= FAILED_SENDS_OK * max(1, len(sends))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, nargs="+", default=[0.01, 0.05])
    parser.add_argument("--brokers", type=int, nargs="+", default=[4, 8, 11, 14])
    parser.add_argument("--wall", type=float, default=10.0, help="wall seconds of measured run per size")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    print("| nodes | scale | cpu/node (% core) | cores used | worst lateness (ms) | threshold | failed sends | healthy "
          "| cpu/node by role |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="rmqemu-capacity-") as tmp:
        for scale in args.scale:
            for brokers in args.brokers:
                r = measure(brokers, scale, args.wall, Path(tmp))
                rows.append(r)
                print(f"| {r['nodes']} | {scale:g} | {r['cpu_per_node_pct']} | {r['cpu_cores']} | {r['lateness_ms']} "
                      f"({r['worst_node']}) | {r['threshold_ms']:g} | {r['failed']}/{r['sends']} "
                      f"({r['failed_pct']} %) | "
                      f"{'yes' if r['healthy'] else 'no'} | {r['cpu_pct_by_role']} |", flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in psutil.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
