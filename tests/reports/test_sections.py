"""Metrics of a few sections only (``only=``): the sections named by names or paths, the same
values as the whole document, and clear errors for a section not asked for."""
from __future__ import annotations

from pathlib import Path

import pytest

from rmqemu.emulator.testing import expect_metrics
from rmqemu.errors import ExpectationError
from rmqemu.reports import job
from rmqemu.reports.metrics import HEADER, SECTIONS, sections_of
from tests.reports.runlog import write_run
from tests.reports.test_kill import kill_scenario
from tests.reports.test_many import pause_scenario


def test_sections_of_names_paths_and_expect_mappings() -> None:
    assert sections_of(None) == tuple(SECTIONS)
    assert sections_of("consumption") == ("consumption",)
    # document order, whatever the order asked; paths name their section; the header needs none
    assert sections_of(["sends.ok", "consumption.lost", "sends", "events", "bad_lines.total"]) == \
        ("sends", "consumption")
    assert sections_of({"drain.completed": True, "staleness.clients_total.stale_ms": {"max": 1}}) == \
        ("staleness", "drain")
    assert sections_of(HEADER) == ()
    with pytest.raises(ExpectationError) as bad:
        sections_of(["consumption.lost", "consumtion.lost", "latency"])
    assert "consumtion.lost, latency" in str(bad.value) and "sections: staleness" in str(bad.value)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("sections")
    return (str(write_run(root / "kill", *kill_scenario())), str(write_run(root / "pause", *pause_scenario())))


def test_a_document_of_some_sections_is_that_part_of_the_whole_one(runs) -> None:
    from rmqemu.reports.local import analyse_dirs
    from rmqemu.reports.metrics import document

    result = analyse_dirs([runs[1]])[0]
    whole = document(result)
    part = document(result, sections_of(["misrouted.total", "consumption"]))
    assert list(part) == [*list(whole)[:8], "misrouted", "consumption"]
    assert {k: v for k, v in whole.items() if k in part} == part
    assert part["misrouted"]["by_reason"]["paused"] == 1


@pytest.mark.spark
def test_the_sections_asked_for_equal_the_whole_documents(spark, runs) -> None:
    whole = job.compute_many(spark, list(runs))
    part = job.compute_many(spark, list(runs), only=["misrouted.total", "consumption"])
    for run_dir in runs:
        assert list(part[run_dir]) == [*list(whole[run_dir])[:8], "misrouted", "consumption"]
        assert {k: v for k, v in whole[run_dir].items() if k in part[run_dir]} == part[run_dir]
    assert part[runs[1]]["misrouted"]["by_reason"]["paused"] == 1  # a value, not just a key
    header = job.metrics(spark, runs[0], only=["events"])
    assert list(header) == list(whole[runs[0]])[:8] and header["events"] == whole[runs[0]]["events"]


@pytest.mark.spark
def test_an_expectation_on_a_section_left_out_says_so(spark, runs) -> None:
    part = job.metrics(spark, runs[0], only=["sends"])
    assert [v.passed for v in expect_metrics(part, {"sends.ok": {"min": 1}})] == [True]
    with pytest.raises(ExpectationError) as missing:
        expect_metrics(part, {"sends.ok": {"min": 1}, "consumption.lost": 0}, Path(runs[0]))
    assert "expect.consumption.lost" in str(missing.value) and "only=" in str(missing.value)
    assert "sends.ok" not in str(missing.value)
