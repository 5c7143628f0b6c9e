"""Metrics of a few sections only (``only=``): the graph pruned to what their queries read,
the same values as the whole document, and clear errors for a section not asked for."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from emulator.testing import expect_metrics
from reports import job
from reports.metrics import HEADER, SECTIONS, metric_query_steps, queries_of, sections_of
from reports.pipeline import analysis_steps
from reports.tasks import step, upstream
from rmqemu.errors import ExpectationError
from tests.reports.runlog import write_run
from tests.reports.test_kill import kill_scenario
from tests.reports.test_many import pause_scenario


def test_upstream_keeps_the_named_steps_and_what_they_need_in_order() -> None:
    steps = [step("a", lambda: 1), step("b", lambda: 2), step("c", lambda a: a, "a"),
             step("d", lambda c, b: c, "c", "b"), step("e", lambda a: a, "a")]
    assert [s.name for s in upstream(steps, ["d"])] == ["a", "b", "c", "d"]
    assert [s.name for s in upstream(steps, ["e", "c"])] == ["a", "c", "e"]
    assert upstream(steps, []) == []
    with pytest.raises(ValueError, match="no step named"):
        upstream(steps, ["x"])


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


def test_a_section_builds_only_the_tables_its_queries_read(spark) -> None:
    run = SimpleNamespace(events=None, nodes=None, run_start=0.0, run_end=1.0, measure_end=1.0,
                          stop_ms=None, up_ms=None)
    steps = analysis_steps(run) + metric_query_steps(run)  # lambdas: nothing is built yet

    def needs(*sections: str) -> set[str]:
        return {s.name for s in upstream(steps, queries_of(sections))}

    assert needs("consumption", "sends", "drain") == {
        "sends", "m.consumption", "m.group_loss", "m.outcomes", "m.latency", "m.no_route", "m.drain"}
    assert needs("timing") == {"faults", "pauses", "m.timing"}
    misrouted = needs("misrouted")
    assert "classified" in misrouted and "truth" not in misrouted and "client_views" not in misrouted
    assert {"truth", "client_intervals", "convergence", "classified"} <= needs("staleness")
    assert needs(*SECTIONS) == {s.name for s in steps}  # every step serves some section


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("sections")
    return (str(write_run(root / "kill", *kill_scenario())), str(write_run(root / "pause", *pause_scenario())))


def test_the_sections_asked_for_equal_the_whole_documents(spark, runs) -> None:
    whole = job.compute_many(spark, list(runs))
    part = job.compute_many(spark, list(runs), only=["misrouted.total", "consumption"])
    for run_dir in runs:
        assert list(part[run_dir]) == [*list(whole[run_dir])[:8], "misrouted", "consumption"]
        assert {k: v for k, v in whole[run_dir].items() if k in part[run_dir]} == part[run_dir]
    assert part[runs[1]]["misrouted"]["by_reason"]["paused"] == 1  # a value, not just a key
    header = job.metrics(spark, runs[0], only=["events"])
    assert list(header) == list(whole[runs[0]])[:8] and header["events"] == whole[runs[0]]["events"]


def test_an_expectation_on_a_section_left_out_says_so(spark, runs) -> None:
    part = job.metrics(spark, runs[0], only=["sends"])
    assert [v.passed for v in expect_metrics(part, {"sends.ok": {"min": 1}})] == [True]
    with pytest.raises(ExpectationError) as missing:
        expect_metrics(part, {"sends.ok": {"min": 1}, "consumption.lost": 0}, Path(runs[0]))
    assert "expect.consumption.lost" in str(missing.value) and "only=" in str(missing.value)
    assert "sends.ok" not in str(missing.value)
