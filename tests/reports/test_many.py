"""Several runs in one report job: each run is read with its own manifest and lines, and each
run's metrics are what a report of that run alone gives (and what the in-process analysis,
:func:`tests.reports.runlog.metrics_of`, gives); the metrics-only function."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rmqemu.errors import RunInputError
from rmqemu.reports import job
from rmqemu.reports.cli import report_command
from rmqemu.reports.engine import analyse_runs, names
from tests.reports.runlog import croute, exit_, fault, metrics_of, nroute, send, start, topic, write_run
from tests.reports.test_kill import kill_scenario

T = "T"

pytestmark = pytest.mark.spark


def pause_scenario() -> tuple[list[dict], list[dict]]:
    """A paused master (sends to it ``paused``, over-staleness), unlike the kill scenario."""
    events = [
        start(1000, "namesrv-0", "namesrv"),
        start(1000, "broker-a-0", "broker"), start(1000, "broker-b-0", "broker"),
        start(1000, "pg-1-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
        nroute(1100, "namesrv-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]),
        send(2200, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="m1"),
        send(2700, "pg-1-0", T, "broker-b", msg_id="m2"),
        *[exit_(4000, n, code=0) for n in ("namesrv-0", "broker-a-0", "broker-b-0", "pg-1-0")],
    ]
    faults = [fault(2000, "fault.start", "f1", "pause", ["broker-a-0"]),
              fault(2600, "fault.end", "f1", "pause", ["broker-a-0"])]
    return events, faults


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("many")
    return write_run(root / "kill", *kill_scenario()), write_run(root / "pause", *pause_scenario())


def test_each_run_is_read_with_its_own_manifest_and_lines(spark, two_runs):
    a, b = (str(p) for p in two_runs)
    together = analyse_runs(spark, [a, b], names(["m.outcomes"]))
    alone = [analyse_runs(spark, [p], names(["m.outcomes"]))[0] for p in (a, b)]
    assert [r.meta.key for r in together] == [a, b] and [r.meta.id for r in together] == [0, 1]
    assert [r.meta.manifest.run for r in together] == ["r1", "r1"]  # the manifests, in the order given
    counts = [r.meta.event_count for r in together]
    assert counts == [r.meta.event_count for r in alone] and counts[0] != counts[1]
    assert counts[0] == 23  # the kill scenario: 21 node lines + 2 fault lines


def test_two_runs_in_one_call_give_each_run_its_own_metrics(spark, two_runs):
    a, b = (str(p) for p in two_runs)
    together = job.compute_many(spark, [a, b])
    assert list(together) == [a, b]
    alone = {rd: metrics_of(Path(rd)) for rd in (a, b)}
    assert together == alone
    assert together[a] != together[b]
    assert together[a]["misrouted"]["by_reason"]["dead"] == 1
    assert together[b]["misrouted"]["by_reason"]["paused"] == 1


def test_runs_analysed_together_give_each_the_metrics_json_it_gets_alone_byte_for_byte(spark, two_runs):
    """One plan analyses every run, each table keyed by ``run``. Both runs have the same node
    names, topic and times, so a window, group-by or join that left ``run`` out of its keys
    would mix their rows and change a number of one of them."""
    a, b = (str(p) for p in two_runs)
    together = job.compute_many(spark, [a, b])
    for rd in (a, b):
        assert json.dumps(together[rd], indent=2) == json.dumps(job.metrics(spark, rd), indent=2)


def test_report_of_two_runs_writes_each_run_its_report(spark, two_runs, tmp_path):
    copies = []
    for run in two_runs:  # own copies: other tests of this module read the originals
        dest = tmp_path / run.name
        write_run(dest, *_events_of(run))
        copies.append(dest)
    result = CliRunner().invoke(report_command, [str(c) for c in copies], obj={"spark": spark},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [str(c / "report" / "report.html") for c in copies]
    for run in copies:
        written = json.loads((run / "report" / "metrics.json").read_text())
        assert written == metrics_of(run)
        assert (run / "report" / "parquet" / "sends").is_dir()


def _events_of(run: Path) -> tuple[list[dict], list[dict]]:
    events = [json.loads(line) for f in sorted((run / "events").glob("*.jsonl")) for line in f.read_text().splitlines()]
    faults = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines()]
    return events, faults


def test_out_with_several_runs_is_a_usage_error(spark, two_runs, tmp_path):
    result = CliRunner().invoke(report_command, [*map(str, two_runs), "--out", str(tmp_path / "r")],
                                obj={"spark": spark})
    assert result.exit_code == 2 and "--out names one report directory" in result.output


def test_the_same_run_twice_is_bad_input(spark, two_runs):
    with pytest.raises(RunInputError, match="given twice"):
        job.compute_many(spark, [str(two_runs[0]), str(two_runs[0])])


def test_metrics_only_writes_nothing_and_equals_the_report(spark, two_runs):
    run = two_runs[1]
    got = job.metrics(spark, str(run))
    assert got == metrics_of(run)
    assert got["misrouted"]["by_reason"]["paused"] == 1
    assert not (run / "report").exists()


def test_runs_in_directories_with_spaces_percent_and_accents_keep_their_events(spark, tmp_path):
    """The tasks open the paths the driver listed: names a URI would encode are read as they are."""
    odd = write_run(tmp_path / "run é 100%+1", *kill_scenario())
    plain = write_run(tmp_path / "plain", *pause_scenario())
    together = analyse_runs(spark, [str(odd), str(plain)], names(["m.outcomes"]))
    alone = [analyse_runs(spark, [str(p)], names(["m.outcomes"]))[0] for p in (odd, plain)]
    counts = [r.meta.event_count for r in together]
    assert counts == [r.meta.event_count for r in alone] and counts[0] == 23


def test_the_same_run_spelled_two_ways_is_bad_input(spark, two_runs):
    with pytest.raises(RunInputError, match="read for two run directories"):
        job.compute_many(spark, [str(two_runs[0]), str(two_runs[0]) + "/"])
