"""A report or ``metrics()`` call leaves nothing cached on the caller's session: the pytest
plugin's session lives as long as its worker, and every table left cached would cost memory
and be matched against by every later query's analysis."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark import StorageLevel

from reports import job
from reports.load import RunData
from tests.reports.runlog import write_run
from tests.reports.test_kill import kill_scenario


@pytest.fixture()
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[RunData]:
    """The runs each job call loads (``job.load_runs`` wrapped, not replaced)."""
    seen: list[RunData] = []
    real = job.load_runs

    def recording(spark: Any, run_dirs: list[str]) -> list[RunData]:
        runs = real(spark, run_dirs)
        seen.extend(runs)
        return runs

    monkeypatch.setattr(job, "load_runs", recording)
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
    source.unpersist()
