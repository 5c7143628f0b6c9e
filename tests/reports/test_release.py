"""A report or ``metrics()`` call leaves nothing persisted on the caller's session: the pytest
plugin's session lives as long as its worker, and every table left cached would cost memory
and be matched against by every later query's analysis."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqemu.reports import job
from tests.reports.runlog import write_run
from tests.reports.test_kill import kill_scenario

pytestmark = pytest.mark.spark


def _persisted(spark: Any) -> int:
    return spark.sparkContext._jsc.getPersistentRDDs().size()


def test_metrics_and_a_report_leave_no_rdd_persisted(spark, tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", *kill_scenario())
    assert job.metrics(spark, str(run))["events"] > 0
    assert _persisted(spark) == 0
    job.run_report(spark, str(run), tmp_path / "out", parquet=True)
    assert (tmp_path / "out" / "parquet" / "truth" / "part-0.parquet").is_file()
    assert _persisted(spark) == 0
