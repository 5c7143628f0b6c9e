"""Read the per-node profiles of a run launched with ``RMQEMU_PROFILE_DIR`` and say, per role, where
the CPU went.

    RMQEMU_PROFILE_DIR=/tmp/prof rmqemu launch topologies/chaos-quickstart.yaml
    .venv/bin/python bench/node_profile.py /tmp/prof [--top 15] [--sort tottime|cumulative]

Why per role: nodes of one role do the same work, so their profiles add up into one readable
table, and the roles differ by an order of magnitude (a master broker costs several namesrvs).
Beside the cProfile tables (CPU time of each node's loop thread, see
``emulator/node/profiling.py``), it prints each role's thread CPU from ``<node>.cpu.json``: the
loop thread's user and system seconds and libzmq's I/O threads'. A large system share means
wake-ups and system calls, which no Python-level change in the profile removes.
"""

from __future__ import annotations

import argparse
import json
import pstats
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capacity import role_of  # noqa: E402


def thread_cpu(files: list[Path]) -> dict[str, float]:
    """Summed seconds over nodes: the busiest thread (the loop) user/system, the others together."""
    total = {"loop_user": 0.0, "loop_system": 0.0, "other_threads": 0.0}
    for path in files:
        threads = sorted(json.loads(path.read_text()).values(), key=lambda t: t["user"] + t["system"], reverse=True)
        if not threads:
            continue
        total["loop_user"] += threads[0]["user"]
        total["loop_system"] += threads[0]["system"]
        total["other_threads"] += sum(t["user"] + t["system"] for t in threads[1:])
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile_dir", type=Path)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative", "ncalls"])
    args = parser.parse_args()
    by_role: dict[str, list[Path]] = defaultdict(list)
    for prof in sorted(args.profile_dir.glob("*.prof")):
        by_role[role_of(prof.stem)].append(prof)
    if not by_role:
        raise SystemExit(f"{args.profile_dir}: no *.prof files (was RMQEMU_PROFILE_DIR set for the launch?)")
    for role, profs in sorted(by_role.items()):
        cpu = thread_cpu([p.with_suffix(".cpu.json") for p in profs if p.with_suffix(".cpu.json").exists()])
        stats = pstats.Stats(*map(str, profs))
        print(f"===== {role}: {len(profs)} node(s), profiled loop CPU {stats.total_tt:.2f} s; threads: "
              f"loop user {cpu['loop_user']:.2f} s, loop system {cpu['loop_system']:.2f} s, "
              f"other threads {cpu['other_threads']:.2f} s")
        stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
