"""A real distributed engine: a Spark standalone master and a two-core worker, local processes
(an application's executor is a JVM of its own with its own Python workers, apart from the
driver); ``rmqemu report --master`` and ``rmqemu sweep --master`` on it give the metrics of
local mode, and nothing is left running (docs/design.md §9)."""
from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmqemu.reports import stored
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.faults.live import run_cli
from tests.integration.spark_standalone import standalone
from tests.integration.test_sweep import PAIR, TOPO
from tests.reports.runlog import write_run
from tests.reports.test_kill import kill_scenario
from tests.reports.test_many import pause_scenario

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with standalone(tmp_path_factory.mktemp("spark"), workers=1, cores=2) as url:
        yield url


def test_report_of_two_runs_on_the_cluster_equals_local_mode(master: str, tmp_path: Path) -> None:
    runs = [write_run(tmp_path / "a", *kill_scenario()), write_run(tmp_path / "b", *pause_scenario())]
    proc = run_cli("report", "--master", master, *map(str, runs), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for run, local in zip(runs, analyse_dirs([str(r) for r in runs]), strict=True):
        got = json.loads((run / "report" / "metrics.json").read_text())
        assert json.dumps(got, sort_keys=True) == json.dumps(document(local), sort_keys=True)
        assert (run / "report" / "report.html").is_file()
        assert (run / "report" / "parquet" / "sends" / "part-0.parquet").is_file()


def test_a_two_run_sweep_on_the_cluster_runs_and_analyses_there(master: str, tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(TOPO)
    (tmp_path / "sweep.yaml").write_text(PAIR)
    proc = run_cli("sweep", "sweep.yaml", "--root", "runs", "--master", master, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = Path(proc.stdout.strip().splitlines()[-1]).parent.parent
    assert "2 run(s) now, 0 complete before" in proc.stderr
    with open(out / "report" / "runs.csv") as f:
        rows = {r["run_id"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == ["c000-s1", "c001-s1"] and all(r["verdict"] == "PASS" for r in rows.values())
    for run_id in rows:
        kept = stored.load(str(out / run_id))
        assert kept is not None and kept == document(analyse_dirs([str(out / run_id)])[0])
    again = run_cli("sweep", "sweep.yaml", "--root", "runs", "--master", master, cwd=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "no Spark job: 2 run(s) analysed before" in again.stderr
    assert "starting Spark" not in again.stderr  # nothing to run or analyse: no application on the cluster
