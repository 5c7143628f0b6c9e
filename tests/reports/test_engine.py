"""The Spark engine (:func:`reports.job.compute_many`: one Spark job over every run) and the
in-process one (:func:`reports.local.analyse_dirs`, one run at a time) give the same metrics.json
documents on the hand-made scenarios. Floats are compared to 9 significant digits: the engines
may add the same numbers in another order."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rmqemu.reports import job
from rmqemu.reports.core.analysis import TABLES
from rmqemu.reports.engine import analyse_runs, names
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from rmqemu.reports.plan import plan
from rmqemu.reports.results import rows
from rmqemu.reports.rundir import event_files
from tests.reports.runlog import write_run
from tests.reports.test_availability import write_log
from tests.reports.test_consumption import consumption_log
from tests.reports.test_kill import kill_scenario
from tests.reports.test_many import pause_scenario

pytestmark = pytest.mark.spark


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to 9 significant digits, recursively."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def canonical(doc: dict[str, Any]) -> str:
    return json.dumps(rounded(doc), sort_keys=True, indent=1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("engines")
    return [str(write_run(root / "kill", *kill_scenario())), str(write_run(root / "pause", *pause_scenario())),
            str(write_log(root / "availability")), str(consumption_log(root / "consumption"))]


def test_spark_and_local_engines_give_the_same_metrics(spark, runs: list[str]) -> None:
    together = job.compute_many(spark, runs)
    assert list(together) == runs
    for run_dir in runs:
        alone = document(analyse_dirs([run_dir])[0])
        assert canonical(together[run_dir]) == canonical(alone), Path(run_dir).name


def test_runs_cut_into_pieces_and_shares_give_the_metrics_of_runs_analysed_whole(spark, runs: list[str],
                                                                                 tmp_path: Path) -> None:
    """A large run is read in pieces and its nodes analysed in shares (``share_bytes`` 0 cuts
    these small ones so: a share a node; ``piece_bytes`` 1000 cuts their larger files into byte
    ranges that end inside lines): the same metrics, plot tables and Parquet tables."""
    pieces = [p for task in plan([event_files(r) for r in runs], 0, 1000).reads for p in task.pieces]
    assert len([p for p in pieces if p.start > 0]) >= 4  # files cut in byte ranges
    tables = [str(tmp_path / str(i)) for i in range(len(runs))]
    cut = analyse_runs(spark, runs, names(["m.", "p."]), tables_to=tables, share_bytes=0, piece_bytes=1000)
    for run_dir, result, written in zip(runs, cut, tables, strict=True):
        alone = analyse_dirs([run_dir])[0]
        assert (result.meta.event_count, result.meta.bad_lines) == (alone.meta.event_count, alone.meta.bad_lines)
        assert canonical(document(result)) == canonical(document(alone)), Path(run_dir).name
        plots = {k for k in alone.tables if k.startswith("p.")}
        assert plots and {k for k in result.tables if k.startswith("p.")} == plots
        for name in plots:
            assert rows(result.tables[name]) == rows(alone.tables[name]), name
        assert {p.name for p in Path(written).iterdir()} == set(TABLES)
