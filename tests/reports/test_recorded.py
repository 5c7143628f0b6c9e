"""The analysis gives the recorded real runs the metrics.json the previous engine gave them,
up to float rounding: in this process (no JVM) and in Spark, both runs in one job. They were
written before queues were objects: every line keeps the event registry once converted as the
report converts it (docs/design.md §6, "Older runs"), and the queues are all that differs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.eventdoc import contract_problems, unreadable_files
from tests.reports.recorded import RUNS, rounded, unpack


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("recorded")
    return {name: unpack(name, root) for name in RUNS}


def same(got: dict, want: dict) -> bool:
    return json.dumps(rounded(got), sort_keys=True) == json.dumps(rounded(want), sort_keys=True)


@pytest.mark.parametrize("name", RUNS)
def test_every_line_of_a_recorded_run_keeps_the_registry_once_converted(recorded, name: str) -> None:
    run, _ = recorded[name]
    assert contract_problems(run, upgrade=True) == []
    as_written = contract_problems(run)
    queues = (".publish_queues[", ".subscribe_queues[", ".allocated[", "... and ")  # and how many more
    assert as_written and all(any(q in p for q in queues) for p in as_written), as_written
    assert {p.split(": ")[0] for p in unreadable_files(run)} >= {"pg-1-0.jsonl"}  # the typed reader needs it


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
