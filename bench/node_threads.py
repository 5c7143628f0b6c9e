"""Per role and thread: CPU and context switches of a live cluster of the capacity shape.

    .venv/bin/python bench/node_threads.py --brokers 7 --scale 0.05 [--warmup 12] [--window 8]

Launches the shape of ``bench/capacity.py`` (``4 b`` nodes), waits ``--warmup`` wall seconds,
then reads ``/proc/<pid>/task/*/{stat,status}`` of every node twice, ``--window`` seconds apart,
and prints per role and thread (the loop thread, libzmq's ``ZMQbg/IO/0``, ...): how many nodes,
user and system CPU seconds, voluntary and involuntary context switches per second; then the
cluster's cores and context switches per second. Context switches count wake-ups, which is what
the loop's and the I/O thread's system time is made of; they depend on the load far less than
CPU per node does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capacity import role_of, topology_yaml  # noqa: E402

Sample = dict[tuple[str, int], tuple[str, float, float, int, int]]  # (node, tid) -> thread, user, sys, vcs, nvcs


def sample(launcher: int) -> Sample:
    out: Sample = {}
    for child in psutil.Process(launcher).children(recursive=True):
        try:
            argv = child.cmdline()
            if "rmqemu.emulator.node" not in argv:
                continue
            for tid in os.listdir(f"/proc/{child.pid}/task"):
                base = f"/proc/{child.pid}/task/{tid}"
                stat = Path(f"{base}/stat").read_text().rsplit(")", 1)[1].split()
                comm = Path(f"{base}/comm").read_text().strip()
                status = dict(line.split(":", 1) for line in Path(f"{base}/status").read_text().splitlines())
                thread = "loop" if int(tid) == child.pid else comm
                out[(argv[-1], int(tid))] = (thread, int(stat[11]) / 100, int(stat[12]) / 100,
                                             int(status["voluntary_ctxt_switches"]),
                                             int(status["nonvoluntary_ctxt_switches"]))
        except (psutil.Error, OSError, KeyError, IndexError):
            continue
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=7)
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--warmup", type=float, default=12.0)
    parser.add_argument("--window", type=float, default=8.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rmqemu-threads-") as tmp:
        topo = Path(tmp) / "t.yaml"
        topo.write_text(topology_yaml(args.brokers, args.scale, (args.warmup + args.window + 20) / args.scale))
        proc = subprocess.Popen([str(Path(sys.executable).with_name("rmqemu")), "launch", str(topo), "--run-dir",
                                 str(Path(tmp) / "run"), "--no-progress"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(args.warmup)
            before, t0 = sample(proc.pid), time.monotonic()
            time.sleep(args.window)
            after, dt = sample(proc.pid), time.monotonic() - t0
        finally:
            proc.terminate()
            proc.wait()
    rows: dict[tuple[str, str], list[float]] = {}
    for key, (thread, user, system, vcs, nvcs) in after.items():
        if key not in before:
            continue
        _, user0, system0, vcs0, nvcs0 = before[key]
        row = rows.setdefault((role_of(key[0]), thread), [0, 0.0, 0.0, 0, 0])
        for i, v in enumerate((1, user - user0, system - system0, vcs - vcs0, nvcs - nvcs0)):
            row[i] += v
    print(f"{dt:.1f} s window, load average {os.getloadavg()[0]:.1f}")
    print("| role | thread | nodes | user s | system s | voluntary cs/s | involuntary cs/s |")
    print("|---|---|---|---|---|---|---|")
    for (role, thread), (n, user, system, vcs, nvcs) in sorted(rows.items()):
        print(f"| {role} | {thread} | {n} | {user:.2f} | {system:.2f} | {vcs / dt:.0f} | {nvcs / dt:.0f} |")
    cpu = sum(r[1] + r[2] for r in rows.values())
    cs = sum(r[3] + r[4] for r in rows.values())
    print(f"cluster: {cpu / dt:.2f} cores, {cs / dt:.0f} context switches/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
