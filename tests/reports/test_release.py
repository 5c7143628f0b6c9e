"""A report or ``metrics()`` call leaves nothing cached on the caller's session: the pytest
plugin's session lives as long as its worker, and every table left cached would cost memory
and be matched against by every later query's analysis."""
from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from pyspark import StorageLevel

from reports import collect, job
from reports.load import RunData
from tests.reports.runlog import write_run
from tests.reports.test_kill import kill_scenario


@pytest.fixture()
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[RunData]:
    """The runs each job call loads (``reports.collect.load_runs`` wrapped, not replaced)."""
    seen: list[RunData] = []
    real = collect.load_runs

    def recording(spark: Any, run_dirs: list[str]) -> list[RunData]:
        runs = real(spark, run_dirs)
        seen.extend(runs)
        return runs

    monkeypatch.setattr(collect, "load_runs", recording)
    return seen


def test_metrics_releases_the_cached_events(spark, tmp_path: Path, loaded: list[RunData]) -> None:
    run = write_run(tmp_path / "run", *kill_scenario())
    doc = job.metrics(spark, str(run))
    assert doc["events"] > 0
    assert loaded and loaded[0].source is not None
    assert loaded[0].source.storageLevel == StorageLevel(False, False, False, False, 1)


def test_a_report_releases_the_cached_events(spark, tmp_path: Path, loaded: list[RunData]) -> None:
    run = write_run(tmp_path / "run", *kill_scenario())
    job.run_report(spark, str(run), tmp_path / "out", parquet=True)
    assert (tmp_path / "out" / "parquet" / "truth").is_dir()
    assert loaded[0].source is not None
    assert loaded[0].source.storageLevel == StorageLevel(False, False, False, False, 1)


def test_compute_keeps_the_events_cached_for_its_analysis(spark, tmp_path: Path, loaded: list[RunData]) -> None:
    """``compute`` hands back a live analysis: its tables must stay cheap to read."""
    run = write_run(tmp_path / "run", *kill_scenario())
    analysis, _ = job.compute(spark, str(run))
    source = loaded[0].source
    assert source is not None and source.storageLevel.useMemory
    # the lazily cut node table keeps the plan it is cut from: its SQL metrics are updated
    # by the job that computes the cut, and the JVM holds them only weakly
    nodes = loaded[0].loaded[1]
    assert nodes._rmqemu_source.columns == nodes.columns
    source.unpersist()


def _py4j_proxies() -> int:
    from py4j.java_gateway import JavaObject

    return sum(isinstance(o, JavaObject) for o in gc.get_objects())


@pytest.mark.parametrize("call", ["metrics", "report"])
def test_a_call_frees_the_jvm_objects_it_made(spark, tmp_path: Path, call: str) -> None:
    """py4j proxies form reference cycles (a JavaObject keeps its JavaMembers, each pointing
    back), so without a collection at the end of the call the JVM objects of a finished
    analysis (plans, checkpointed tables) stay pinned until Python's cyclic collector happens
    to run. The automatic collector is off here, so only the call's own collection counts."""
    run = write_run(tmp_path / "run", *kill_scenario())
    job.metrics(spark, str(run))  # the first call creates the session's long-lived proxies
    gc.collect()
    before = _py4j_proxies()
    gc.disable()
    try:
        if call == "metrics":
            assert job.metrics(spark, str(run))["events"] > 0
        else:
            assert job.run_report(spark, str(run), tmp_path / "out", parquet=False).metrics["events"] > 0
        left = _py4j_proxies() - before
    finally:
        gc.enable()
    assert left <= 10, f"{left} py4j proxies of the call still alive"
