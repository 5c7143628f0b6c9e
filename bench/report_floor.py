"""The floor a report cannot beat: a bare PySpark process that starts a session and reads
the event files of some runs once.

    .venv/bin/python bench/report_floor.py RUN_DIR [RUN_DIR ...]

Builds the session as ``rmqemu report`` does (``reports.session.build_session``, the small-input
JVM when the logs are small), reads every run's ``events/*.jsonl`` and
``faults.jsonl`` with the report's schema and counts the lines: one scan, one job. Prints
the whole process's wall time (Python start included, as ``time rmqemu report`` sees it)
and the load average. Compare it with ``time rmqemu report`` in the same minute.
"""
from __future__ import annotations

import os
import sys
import time

T0 = time.perf_counter()

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports.rundir import event_paths  # noqa: E402
from reports.schema import EVENT_SCHEMA  # noqa: E402
from reports.session import SMALL_INPUT_BYTES, build_session, stop_session  # noqa: E402


def main() -> int:
    paths = [p for rd in sys.argv[1:] for p in event_paths(rd)]
    spark = build_session(None, small_input=sum(os.path.getsize(p) for p in paths) < SMALL_INPUT_BYTES)
    n = spark.read.schema(EVENT_SCHEMA).json(paths).count()
    stop_session(spark)
    print(f"bare read: {n:,} lines of {len(paths)} files in {time.perf_counter() - T0:.1f} s "
          f"(whole process from import; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
