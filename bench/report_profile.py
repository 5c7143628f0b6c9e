"""Where ``rmqemu report``'s time goes: every Spark action, its caller and its jobs.

    .venv/bin/python bench/report_profile.py RUN_DIR [--big] [--top 40] [--repeat 1]

Builds the session as the CLI does (``reports.cli.build_session``, small-input settings
unless ``--big``), then runs ``reports.job.run_report`` into a temporary directory with
the DataFrame actions (``collect``, ``toPandas``, ``count``, ``localCheckpoint``,
``checkpoint``, Parquet writes) wrapped: each call records its wall time, the number of
Spark jobs it started and the line in ``reports/`` that made it. Prints per-stage
seconds and job counts, then the slowest actions.

Why a script and not a test: it measures, it does not assert timings (they depend on the
load of the machine; run it a few times).
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import DataFrameWriter  # noqa: E402
from pyspark.sql.classic.dataframe import DataFrame  # noqa: E402  (PySpark 4: the methods live here)

from reports.cli import THREADS, build_session, stop_session  # noqa: E402
from reports import tasks  # noqa: E402
from reports.job import run_report  # noqa: E402

CALLS: list[tuple[str, str, float, int]] = []  # (method, caller, seconds, jobs)


def _caller() -> str:
    """The innermost frame in reports/ outside this script: who asked for the action."""
    for fr in reversed(traceback.extract_stack()[:-2]):
        if "/reports/" in fr.filename:
            return f"{Path(fr.filename).name}:{fr.lineno} {fr.name}"
    return "?"


def _jobs(spark: Any) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def wrap(cls: type, name: str, spark: Any) -> None:
    """Replace ``cls.name`` with a timing, job-counting wrapper (not re-entrant-counted)."""
    orig = getattr(cls, name)
    depth = [0]

    @functools.wraps(orig)
    def timed(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        j0, t0 = _jobs(spark), time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                CALLS.append((name, _caller(), time.perf_counter() - t0, _jobs(spark) - j0))

    setattr(cls, name, timed)


def jvm_cpu_seconds(jvm_pid: int) -> float:
    """CPU (user + system) used so far by the driver JVM."""
    with open(f"/proc/{jvm_pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(jvm_pid: int) -> float:
    """CPU (user + system) used so far by this Python process and the driver JVM: steadier
    than wall time on a machine other work shares."""
    return sum(os.times()[:2]) + jvm_cpu_seconds(jvm_pid)


class StageClock:
    """Progress callback for ``run_report``: wall and CPU seconds per announced stage."""

    def __init__(self, jvm_pid: int) -> None:
        self.pid, self.rows = jvm_pid, []
        self.last: tuple[str, float, float] | None = None

    def __call__(self, message: str) -> None:
        self.stop()
        self.last = (message.split()[0], time.perf_counter(), cpu_seconds(self.pid))

    def stop(self) -> None:
        if self.last is not None:
            name, w, c = self.last
            self.rows.append((name, time.perf_counter() - w, cpu_seconds(self.pid) - c))
            self.last = None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--big", action="store_true", help="large-input session settings")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=1, help="run the report this many times (warm JVM after the first)")
    ap.add_argument("--timeline", action="store_true", help="print when each step ran (last run)")
    ap.add_argument("--workers", type=int, default=THREADS, help="threads for independent Spark steps")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a runtime SQL conf to set before the run (to try settings)")
    ap.add_argument("--session-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a static conf for the session (passed to build_session)")
    a = ap.parse_args()
    t = time.perf_counter()
    spark = build_session(None, small_input=not a.big, conf=dict(kv.partition("=")[::2] for kv in a.session_conf))
    print(f"session start-up {time.perf_counter() - t:.1f} s", flush=True)
    for kv in a.conf:
        key, _, value = kv.partition("=")
        spark.conf.set(key, value)
    for cls, names in ((DataFrame, ("collect", "toPandas", "count", "localCheckpoint", "checkpoint", "isEmpty")),
                       (DataFrameWriter, ("parquet",))):
        for n in names:
            wrap(cls, n, spark)
    pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    for i in range(a.repeat):
        CALLS.clear()
        tasks.TIMELINE = []
        j0 = _jobs(spark)
        clock = StageClock(pid)
        with tempfile.TemporaryDirectory() as out:
            t, c, j = time.perf_counter(), cpu_seconds(pid), jvm_cpu_seconds(pid)
            run_report(spark, a.run_dir, Path(out), progress=clock, workers=a.workers)
            clock.stop()
            total, cpu, jvm = time.perf_counter() - t, cpu_seconds(pid) - c, jvm_cpu_seconds(pid) - j
        stages = ", ".join(f"{n} {w:.1f}/{c:.1f}" for n, w, c in clock.rows)
        print(f"run {i + 1}: {total:.1f} s wall, {cpu:.1f} s CPU ({jvm:.1f} JVM), {_jobs(spark) - j0} jobs, {len(CALLS)} actions; "
              f"stages wall/CPU s: {stages}; load average {os.getloadavg()[0]:.1f}", flush=True)
    if a.timeline:
        t0 = min(t for _, _, t, _ in tasks.TIMELINE)
        print(f"\n{'start':>6} {'end':>6}  step (thread), last run, seconds from the first step")
        for name, thread, start, end in sorted(tasks.TIMELINE, key=lambda r: r[2]):
            print(f"{start - t0:6.2f} {end - t0:6.2f}  {name} ({thread})")
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0])
    for name, caller, secs, jobs in CALLS:
        p = per[f"{name:15s} {caller}"]
        p[0] += secs
        p[1] += 1
        p[2] += jobs
    print(f"\n{'seconds':>8} {'calls':>5} {'jobs':>5}  action / caller (last run)")
    for key, (secs, n, jobs) in sorted(per.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print(f"{secs:8.2f} {n:5d} {jobs:5d}  {key}")
    stop_session(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
