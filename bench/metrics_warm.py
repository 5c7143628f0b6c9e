"""What ``reports.job.metrics()`` of a run costs on a warm session (what the pytest plugin's
``rmqemu_spark`` gives every test after its worker's first).

    .venv/bin/python bench/metrics_warm.py RUN_DIR [--calls 5] [--only consumption.lost,...]

Builds the test plugin's session (``local[2]``, ``emulator.testing.TEST_SPARK_CONF``), times
its start, a first call (cold Python workers) and ``--calls`` warm calls of the same run.
Nothing asserts; it prints the figures.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqemu.emulator.testing import TEST_SPARK_CONF  # noqa: E402
from rmqemu.reports.job import metrics  # noqa: E402
from rmqemu.reports.session import build_session, stop_session  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--only", default="", help="sections or paths, comma-separated (metrics(only=...))")
    args = parser.parse_args()
    only = [p for p in args.only.split(",") if p] or None
    t = time.perf_counter()
    spark = build_session("local[2]", conf=TEST_SPARK_CONF, small_input=True)
    print(f"session start: {time.perf_counter() - t:.1f} s")
    try:
        took = []
        for i in range(args.calls + 1):
            t = time.perf_counter()
            doc = metrics(spark, args.run_dir, only=only)
            took.append(time.perf_counter() - t)
            print(f"call {i}: {doc['events']:,} events, {took[-1]:.2f} s" + (" (first)" if i == 0 else ""))
        print(f"warm: median {statistics.median(took[1:]):.2f} s, min {min(took[1:]):.2f} s")
    finally:
        stop_session(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
