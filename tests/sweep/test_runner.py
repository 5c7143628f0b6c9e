"""How a sweep runs its runs, without a cluster: what ``run_one`` makes of a launch's end, how an
interrupt stops ``run_sweep``, and what ``SparkRuns`` makes of a task's row or failure (a fake
SparkContext; the real one runs in tests/integration/test_sweep.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from rmqemu.emulator.sweep import runner
from rmqemu.emulator.sweep.on_spark import SparkRuns, run_task, spark_parallel
from rmqemu.emulator.sweep.runner import NOT_STARTED, RunResult, RunTask, prepare_run, run_one, run_sweep
from rmqemu.emulator.sweep.spec import parse_sweep
from tests.sweep.tiny import TINY_TOPOLOGY as TOPO


@pytest.fixture
def spec(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TOPO)
    return parse_sweep({"sweep": "s", "topology": "tiny.yaml", "seeds": [1, 2],
                        "vary": {"producers.*.pollNameServerInterval": [5000, 30000]}, "parallel": 1},
                       "s.yaml", tmp_path)


def task(out: Path, topology_file: Path, run_id: str = "c000-s1") -> RunTask:
    return RunTask(run_id, out, topology_file, 1, {"k": 1}, ())


def test_a_launch_that_refuses_its_topology_is_a_complete_broken_run(tmp_path: Path) -> None:
    result = run_one(task(tmp_path, tmp_path / "missing.json"))  # a real launch: exits 2 at once
    assert result.exit_code == 2 and not result.error
    assert "missing.json" in (tmp_path / "c000-s1" / "launch.log").read_text()
    done = json.loads((tmp_path / "c000-s1" / "done.json").read_text())
    assert done == {"run_id": "c000-s1", "exit_code": 2, "fell_behind": False, "seed": 1, "cell": {"k": 1}}


def test_a_run_that_cannot_start_is_a_result_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file where the sweep directory should be")
    result = run_one(task(tmp_path / "out", tmp_path / "t.json"))
    assert result.exit_code == NOT_STARTED and "cannot start the run" in result.error


@pytest.mark.parametrize("code", [130, 143, -9])
def test_a_launch_stopped_by_a_signal_leaves_the_run_incomplete(tmp_path: Path, monkeypatch, code: int) -> None:
    monkeypatch.setattr(runner._LAUNCHES, "run", lambda args, log: code)
    result = run_one(task(tmp_path, tmp_path / "t.json"))
    assert result.exit_code == code and "run again" in result.error
    assert (tmp_path / "c000-s1").is_dir() and not (tmp_path / "c000-s1" / "done.json").exists()


def test_an_interrupt_starts_no_more_runs_and_cancels_those_under_way(spec, tmp_path: Path) -> None:
    started: list[str] = []
    cancelled: list[bool] = []

    def execute(t: RunTask) -> RunResult:
        started.append(t.run_id)
        return RunResult(t.run_id, t.out / t.run_id, 0, False)

    def on_done(_result: RunResult) -> None:  # the main thread, where Ctrl-C lands
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, tmp_path, 1, on_done=on_done, execute=execute, cancel=lambda: cancelled.append(True))
    assert started == ["c000-s1"] and cancelled == [True]


def test_runs_at_once_on_spark() -> None:
    assert spark_parallel(budget=3, slots=2, master="local[2]", explicit=False) == 2
    assert spark_parallel(budget=1, slots=4, master="local[4]", explicit=False) == 1  # this host's auto budget
    assert spark_parallel(budget=1, slots=16, master="spark://h:7077", explicit=False) == 16  # not this host's
    assert spark_parallel(budget=2, slots=16, master="spark://h:7077", explicit=True) == 2


class FakeContext:
    """Just what SparkRuns calls: ``parallelize([task], 1).map(f).collect()``, run here."""

    defaultParallelism = 2

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail, self.descriptions, self.cancelled = fail, [], 0

    def setJobDescription(self, text: str) -> None:
        self.descriptions.append(text)

    def parallelize(self, items: list[Any], slices: int) -> "FakeContext":
        self.items = items
        return self

    def map(self, f: Callable[[Any], Any]) -> "FakeContext":
        self.f = f
        return self

    def collect(self) -> list[Any]:
        if self.fail:
            raise self.fail
        return [self.f(item) for item in self.items]  # a row crosses as Spark would carry it

    def cancelAllJobs(self) -> None:
        self.cancelled += 1


class FakeSession:
    def __init__(self, sc: FakeContext) -> None:
        self.sparkContext = sc


def test_spark_runs_turn_a_task_row_into_the_run_result(spec, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(runner._LAUNCHES, "run", lambda args, log: 3)  # a run that broke
    sc = FakeContext()
    t = prepare_run(spec, runner.load_topology(spec.topology_path), spec.runs()[1], tmp_path)
    row = run_task(t)
    assert json.loads(json.dumps(row)) == row  # plain data
    result = SparkRuns(FakeSession(sc))(t)
    assert (result.run_id, result.run_dir, result.exit_code) == ("c000-s2", tmp_path / "c000-s2", 3)
    assert sc.descriptions == ["rmqemu sweep run c000-s2"]
    assert json.loads((tmp_path / "topologies" / "c000-s2.json").read_text())["seed"] == 2


def test_a_failed_spark_task_is_that_runs_broken_result(tmp_path: Path) -> None:
    sc = FakeContext(fail=RuntimeError("Job aborted due to stage failure: Python worker exited unexpectedly\nmore"))
    runs = SparkRuns(FakeSession(sc))
    result = runs(task(tmp_path, tmp_path / "t.json"))
    assert result.exit_code == NOT_STARTED and result.run_dir == tmp_path / "c000-s1"
    assert result.error == "its Spark task failed: Job aborted due to stage failure: Python worker exited unexpectedly"
    runs.cancel()
    assert sc.cancelled == 1 and runs.slots == 2
