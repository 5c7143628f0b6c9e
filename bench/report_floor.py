"""The floors a report is measured against: a bare PySpark process that starts a session and reads
the event files of some runs once.

    .venv/bin/python bench/report_floor.py [--parse] RUN_DIR [RUN_DIR ...]

Builds the session as ``rmqemu report`` does (``reports.session.build_session``, the small-input
JVM when the logs are small), reads every run's ``events/*.jsonl`` and ``faults.jsonl`` with
Spark's JSON reader and the report's schema, and counts the lines: one scan, one job (the
"bare read" of the goals in bench/README.md). Prints the whole process's wall time (Python start
included, as ``time rmqemu report`` sees it) and the load average.

``--parse``: instead, the report's own read tasks (:mod:`reports.plan`, pieces parsed with
pyarrow by :func:`reports.core.lines.read_piece`, the core's columns) that count the lines and do
nothing else: the floor of the engine's reading.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any

T0 = time.perf_counter()

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqemu.reports.rundir import event_files  # noqa: E402
from rmqemu.reports.session import SMALL_INPUT_BYTES, build_session, stop_session  # noqa: E402


def _spark_read(spark: Any, paths: list[str]) -> int:
    """Spark's JSON reader with the report's columns and types, counted."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    from rmqemu.reports.core.schema import EVENT_FIELDS

    return spark.read.schema(from_arrow_schema(pa.schema(EVENT_FIELDS))).json(paths).count()


def _parsed(spark: Any, files: list[list[tuple[str, int]]]) -> int:
    """The engine's read tasks, counting the lines they parse."""
    from rmqemu.reports.core.analysis import READ_COLUMNS
    from rmqemu.reports.core.lines import read_piece
    from rmqemu.reports.plan import plan

    reads = plan(files).reads

    def task(read: Any) -> list[int]:
        return [sum(read_piece(p, READ_COLUMNS)[1].good for p in read.pieces)]
    return sum(spark.sparkContext.parallelize(reads, len(reads)).flatMap(task).collect())


def main() -> int:
    parse = sys.argv[1:2] == ["--parse"]
    files = [event_files(rd) for rd in sys.argv[1 + parse:]]
    size = sum(s for fs in files for _, s in fs)
    spark = build_session(None, small_input=size < SMALL_INPUT_BYTES)
    n = _parsed(spark, files) if parse else _spark_read(spark, [p for fs in files for p, _ in fs])
    stop_session(spark)
    print(f"{'parse' if parse else 'bare'} read: {n:,} lines of {sum(map(len, files))} files in "
          f"{time.perf_counter() - T0:.1f} s (whole process from import; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
