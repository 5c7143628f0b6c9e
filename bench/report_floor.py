"""The floor a report cannot beat: a bare PySpark process that starts a session and reads
the event files of some runs once.

    .venv/bin/python bench/report_floor.py [--grouped] RUN_DIR [RUN_DIR ...]

Builds the session as ``rmqemu report`` does (``reports.session.build_session``, the small-input
JVM when the logs are small), reads every run's ``events/*.jsonl`` and
``faults.jsonl`` with the report's schema and counts the lines: one scan, one job. Prints
the whole process's wall time (Python start included, as ``time rmqemu report`` sees it)
and the load average. Compare it with ``time rmqemu report`` in the same minute.

``--grouped``: instead of counting, hand the node lines to Python tasks grouped by run and
node, as the engine's node step does (its columns, nested ones as JSON text), in tasks that
do nothing: the floor of any analysis that runs per node in Python over Spark's read.
"""
from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

T0 = time.perf_counter()

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqemu.reports.rundir import event_paths  # noqa: E402
from rmqemu.reports.schema import EVENT_SCHEMA  # noqa: E402
from rmqemu.reports.session import SMALL_INPUT_BYTES, build_session, stop_session  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _grouped(lines: DataFrame) -> int:
    """The node lines handed to do-nothing Python tasks per node; the lines they got."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from rmqemu.reports.core.analysis import NODE_COLUMNS, NODE_KINDS
    from rmqemu.reports.engine import wire_columns

    def task(table: pa.Table) -> pa.Table:
        return pa.table({"n": [table.num_rows]})
    return sum(r["n"] for r in lines.filter(F.col("kind").isin(*NODE_KINDS)).select(*wire_columns(NODE_COLUMNS))
               .groupBy("node").applyInArrow(task, "n long").collect())


def main() -> int:
    grouped = sys.argv[1:2] == ["--grouped"]
    paths = [p for rd in sys.argv[1 + grouped:] for p in event_paths(rd)]
    spark = build_session(None, small_input=sum(os.path.getsize(p) for p in paths) < SMALL_INPUT_BYTES)
    if grouped:
        from rmqemu.reports.load import read_events

        n = _grouped(read_events(spark, paths))
    else:
        n = spark.read.schema(EVENT_SCHEMA).json(paths).count()
    stop_session(spark)
    print(f"{'grouped' if grouped else 'bare'} read: {n:,} lines of {len(paths)} files in "
          f"{time.perf_counter() - T0:.1f} s (whole process from import; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
