"""The analysis gives the recorded real runs the metrics.json the previous engine gave them,
up to float rounding: in this process (no JVM) and in Spark, both runs in one job. Sections
added since they were recorded (:data:`NEWER`) are checked apart: the runs have nothing for them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.reports.recorded import RUNS, rounded, unpack


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("recorded")
    return {name: unpack(name, root) for name in RUNS}


#: Sections newer than the recordings: neither run sent an ordered message or consumed orderly.
NEWER = {"order"}


def same(got: dict, want: dict) -> bool:
    assert set(got) == set(want) | NEWER
    assert got["order"]["messages"] == got["order"]["violations"] == got["order"]["failed_sends"]["total"] == 0
    assert got["order"]["groups"] == [] and got["order"]["remaps"]["changes"] == []
    got = {k: v for k, v in got.items() if k not in NEWER}
    return json.dumps(rounded(got), sort_keys=True) == json.dumps(rounded(want), sort_keys=True)


@pytest.mark.parametrize("name", RUNS)
def test_the_local_engine_gives_the_recorded_metrics(recorded, name: str) -> None:
    run, want = recorded[name]
    got = document(analyse_dirs([str(run)], plots_too=False)[0])
    assert got["events"] > 500 and got["sends"]["attempts"] > 0
    assert same(got, want)


@pytest.mark.spark
def test_spark_gives_both_recorded_runs_their_metrics_in_one_job(spark, recorded) -> None:
    from rmqemu.reports import job

    docs = job.compute_many(spark, [str(recorded[name][0]) for name in RUNS])
    for name in RUNS:
        run, want = recorded[name]
        assert same(docs[str(run)], want), name
