"""``rmqemu sweep --master URL``: every run of the sweep as a Spark task (docs/design.md §9, "Sweeps").

The driver keeps the sweep's own loop (:func:`emulator.sweep.runner.run_sweep`: what is complete,
how many at once, progress, resumption) and hands each run to :class:`SparkRuns`, which submits
it as a job of one task. A task calls :func:`run_task` on an executor, which calls the same
:func:`emulator.sweep.runner.run_one` a local sweep calls in a thread: the launch runs as an OS
process of the executor's Python worker, writes under the sweep directory (a path every executor
must share: ``--root``) and picks its own ports on that host. Only a small row comes back.

Why a job per run rather than one job of all runs: the loop then schedules runs as it does
locally (at most ``parallel`` at once, fewer when the host fell behind), sees each run finish
the moment it does, and a run that fails, even its task, is that run's result, never the end
of the other runs. The cost, a job's scheduling (milliseconds), is nothing beside a run's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rmqemu.emulator.sweep.runner import NOT_STARTED, RunResult, RunTask, run_one


def is_local(master: str) -> bool:
    return master.startswith("local")


def prepare_local_workers(master: str) -> None:
    """For a local master, Spark's Python workers must be this interpreter (the one that has
    rmqemu installed): ``PYSPARK_PYTHON``, unless the user set it. Call before the session is
    built. A cluster's executors use their own setting (``spark.pyspark.python``)."""
    if is_local(master):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def spark_parallel(budget: int, slots: int, master: str, explicit: bool) -> int:
    """Runs at once on Spark: the executor slots (``local[N]``: N), capped by the sweep's budget
    (``parallel``, or ``auto``: what this host keeps healthy) when the runs share this host. On a
    cluster the host's budget says nothing about the executors': their slots decide, unless
    ``parallel`` was given as a number."""
    if is_local(master) or explicit:
        return max(1, min(budget, slots))
    return max(1, slots)


def run_task(task: RunTask) -> dict[str, Any]:
    """On an executor: one run, as a small picklable row (never raises, see ``run_one``)."""
    result = run_one(task)
    return {"run_id": result.run_id, "run_dir": str(result.run_dir), "exit_code": result.exit_code,
            "fell_behind": result.fell_behind, "error": result.error}


class SparkRuns:
    """An executor for ``run_sweep``: each call runs one run as a Spark job of one task."""

    def __init__(self, spark: Any) -> None:
        self.sc = spark.sparkContext

    @property
    def slots(self) -> int:
        return int(self.sc.defaultParallelism)

    def __call__(self, task: RunTask) -> RunResult:
        try:
            self.sc.setJobDescription(f"rmqemu sweep run {task.run_id}")
            rows = self.sc.parallelize([task], 1).map(run_task).collect()
            row = rows[0]
        except Exception as exc:  # noqa: BLE001 - the task itself failed (worker lost, cancelled): this run broke
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return RunResult(task.run_id, task.out / task.run_id, NOT_STARTED, False,
                             error=f"its Spark task failed: {first[:300]}")
        return RunResult(row["run_id"], Path(row["run_dir"]), int(row["exit_code"]), bool(row["fell_behind"]),
                         error=str(row["error"]))

    def cancel(self) -> None:
        """Cancel every job under way: Spark kills their tasks' Python workers, and each launch,
        its parent gone, gets SIGTERM and stops its nodes (``runner._Launches``)."""
        self.sc.cancelAllJobs()
