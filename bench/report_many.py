"""Many runs in one report job: metrics of N copies of a run vs of one, and the warm
metrics-only time.

    .venv/bin/python bench/report_many.py RUN_DIR [--runs 20] [--repeat 2] [--conf KEY=VALUE]

Copies RUN_DIR N times (``/tmp/rmqemu-many/run-<i>``, the logs and manifest only), builds
the session as ``rmqemu report`` does (``reports.session.build_session``), then
in that one warm session times, ``--repeat`` times each (the last is printed):

* ``reports.job.metrics(spark, RUN_DIR)``: one run's metrics.json document, nothing
  written (what a test asking a warm session for a small run's metrics pays);
* ``reports.job.compute_many(spark, copies[:1])`` and ``compute_many(spark, copies)``:
  one run, then N runs in one job, with the number of Spark jobs each started.

It checks that every copy's metrics equal the single run's (they are the same logs) and
exits 1 if not. A benchmark, not a test: timings depend on the machine's load (printed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqemu.reports.job import compute_many, metrics  # noqa: E402
from rmqemu.reports.rundir import event_paths  # noqa: E402
from rmqemu.reports.session import build_session, stop_session  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def copies(run_dir: Path, n: int, root: Path) -> list[str]:
    """``n`` copies of the run's logs and manifest under ``root`` (made once)."""
    out = []
    for i in range(n):
        dest = root / f"run-{i}"
        if not (dest / "manifest.json").is_file():
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(run_dir / "events", dest / "events")
            for name in ("manifest.json", "faults.jsonl"):
                if (run_dir / name).is_file():
                    shutil.copy(run_dir / name, dest / name)
        out.append(str(dest))
    return out


def timed(fn: Callable[[], Any], spark: SparkSession) -> tuple[float, int, object]:
    tracker = spark.sparkContext.statusTracker()
    j0, t = len(tracker.getJobIdsForGroup(None)), time.perf_counter()
    got = fn()
    return time.perf_counter() - t, len(tracker.getJobIdsForGroup(None)) - j0, got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--root", type=Path, default=Path("/tmp/rmqemu-many"))
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting applied last (to try one; repeatable)")
    a = ap.parse_args()
    dirs = copies(a.run_dir, a.runs, a.root)
    size = sum(os.path.getsize(p) for d in dirs for p in event_paths(d))
    t = time.perf_counter()
    spark = build_session(None, conf=dict(c.split("=", 1) for c in a.conf))
    print(f"session start-up {time.perf_counter() - t:.1f} s; {a.runs} copies of {a.run_dir} "
          f"({size / 1e6:.1f} MB in all)", flush=True)
    for i in range(a.repeat):
        one_s, _, m = timed(lambda: metrics(spark, str(a.run_dir)), spark)
        single_s, single_jobs, single = timed(lambda: compute_many(spark, dirs[:1]), spark)
        many_s, many_jobs, many = timed(lambda: compute_many(spark, dirs), spark)
        print(f"pass {i + 1}: metrics(run) {one_s:.1f} s; compute_many 1 run {single_s:.1f} s ({single_jobs} jobs), "
              f"{a.runs} runs {many_s:.1f} s ({many_jobs} jobs) = {many_s / single_s:.1f}x; "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
    stop_session(spark)
    want = {k: v for k, v in m.items() if k != "run"}
    same = all({k: v for k, v in doc.items() if k != "run"} == want for doc in [*single.values(), *many.values()])
    print("every copy's metrics equal the run's: " + ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
