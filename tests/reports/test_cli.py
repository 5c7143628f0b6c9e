"""End to end: ``rmqemu report`` on a hand-made run directory, in-process (CliRunner) with
the worker's SparkSession passed as ``obj``; ``--compare``; bad input exits 2."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from rmqemu.reports.cli import report_command
from tests.reports.runlog import by, write_run
from tests.reports.test_kill import kill_scenario

T = "OrderTopic"
TRUNCATED = '{"ts": 3900, "node": "pg-1-0", "kind": "send", "msg_id": "m9", "top'


def kill_run(root: Path) -> Path:
    """The kill scenario of test_kill (exact values known) plus a truncated last line."""
    events, faults = kill_scenario()
    return write_run(root, events, faults, raw_tail={"pg-1-0": TRUNCATED})


def invoke(spark, *args: str):
    return CliRunner().invoke(report_command, list(args), obj={"spark": spark}, catch_exceptions=False)


@pytest.fixture(scope="module")
def reported(spark, tmp_path_factory):
    run = kill_run(tmp_path_factory.mktemp("cli") / "run-a")
    result = invoke(spark, str(run))
    return run, result


@pytest.mark.spark
def test_exit_and_progress(reported):
    run, result = reported
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(run / "report" / "report.html")
    for stage in ("reading", "analysing", "metrics.json", "drawing plots", "Parquet", "report.html"):
        assert stage in result.stderr
    # the kill scenario: pg-1-0 stale 300 ms + pg-2-0 900 ms, one send to the dead broker
    assert "done: clients stale 1,200 wall ms in 2 interval(s); 1 misrouted send(s); 0 lost message(s)\n" \
        in result.stderr


@pytest.mark.spark
def test_metrics_json_design_keys_and_values(reported):
    run, _ = reported
    m = json.loads((run / "report" / "metrics.json").read_text())
    assert m["run"] == "r1" and m["scale"] == 0.01
    assert set(m["staleness"]) >= {"clients", "namesrvs", "faults"}
    keys = {"client", "topic", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms"}
    assert all(keys <= set(r) for r in m["staleness"]["clients"])
    row = by(m["staleness"]["clients"], client="pg-2-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["stale_under_ms"], row["intervals"], row["max_ms"]) == (
        900.0, 900.0, 0.0, 1, 900.0)
    assert row["stale_cluster_s"] == pytest.approx(90.0)
    assert by(m["staleness"]["clients"], client="pg-1-0", topic=T)["stale_ms"] == 300.0
    assert by(m["staleness"]["namesrvs"], namesrv="namesrv-0", topic=T)["stale_ms"] == 10.0
    f = by(m["staleness"]["faults"], fault_id="f1")
    assert (f["fault"], f["converged_ms"]) == ("kill", 900.0)
    assert m["misrouted"] == {"total": 1, "by_reason": {"dead": 1, "paused": 0, "partitioned": 0, "stale_master": 0,
                                                        "not_master": 0, "no_topic": 0, "bad_queue": 0},
                              "by_reason_outcome": {"dead": {"timeout": 1}}}
    s = m["sends"]
    assert (s["attempts"], s["ok"], s["failed"], s["no_route"]) == (3, 2, 1, 0)


@pytest.mark.spark
def test_truncated_line_counted_not_fatal(reported):
    run, _ = reported
    m = json.loads((run / "report" / "metrics.json").read_text())
    assert m["bad_lines"] == {"total": 1, "by_file": {"pg-1-0.jsonl": 1}}
    assert m["events"] == 23  # 21 node lines + 2 fault lines; the broken one is not an event


@pytest.mark.spark
def test_html_self_contained_with_faults_and_plots(reported):
    run, _ = reported
    out = run / "report"
    page = (out / "report.html").read_text()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["availability.png", "latency.png", "misrouted.png", "routes-OrderTopic.png", "staleness.png"]
    for p in pngs:
        assert (out / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert page.count("src='data:image/png;base64,") == len(pngs)
    assert "f1" in page and "kill" in page and "broker-a-0" in page
    assert page.index("Summary") < page.index("Faults") < page.index("data:image/png")
    assert "900 ms (90 cluster s)" in page  # the slowest convergence, in both units
    assert "1 unreadable line(s) were skipped (pg-1-0.jsonl: 1)" in page
    assert "http://" not in page and "https://" not in page and "<script" not in page


@pytest.mark.spark
def test_parquet_tables_read_back(reported):
    run, _ = reported
    pq = run / "report" / "parquet"
    st = pd.read_parquet(pq / "client_staleness").sort_values("client")
    assert list(st.client) == ["pg-1-0", "pg-2-0"] and list(st.stale_ms) == [300.0, 900.0]
    sends = pd.read_parquet(pq / "sends")
    assert len(sends) == 3 and sorted(sends.reason.dropna()) == ["dead"]
    truth = pd.read_parquet(pq / "truth").sort_values("start")
    assert [list(b) for b in truth.brokers] == [["broker-a", "broker-b"], ["broker-b"]]
    assert {p.name for p in pq.iterdir()} >= {"lives", "faults", "client_views", "client_stale_intervals"}


@pytest.mark.spark
def test_compare_two_runs(spark, reported, tmp_path):
    run_a, _ = reported
    run_b = tmp_path / "run-b"
    shutil.copytree(run_a, run_b, ignore=shutil.ignore_patterns("report"))
    manifest = json.loads((run_b / "manifest.json").read_text())
    manifest.update(run="r2", scale=0.1)
    (run_b / "manifest.json").write_text(json.dumps(manifest))
    csv = tmp_path / "cmp.csv"
    result = invoke(spark, "--compare", str(run_a), str(run_b), "--out", str(csv))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["metric", "r1", "r2"]
    row = next(line for line in lines if line.startswith("Longest client stale interval [cluster s]"))
    assert row.split()[-2:] == ["90", "9"]  # 900 wall ms at scale 0.01 and at 0.1
    row = next(line for line in lines if line.startswith("... dead"))
    assert row.split()[-2:] == ["1", "1"]
    table = pd.read_csv(csv).set_index("metric")
    assert list(table.columns) == ["r1", "r2"]
    assert table.loc["Misrouted sends, total"].tolist() == [1, 1]
    assert not (run_b / "report").exists()  # computed for the table, nothing written into the run


def test_report_command_is_registered():
    from rmqemu.emulator.cli.main import main

    assert main.commands["report"] is report_command


@pytest.mark.spark
@pytest.mark.parametrize("case", ["no_dir", "no_manifest", "bad_manifest", "no_events", "unreadable"])
def test_bad_input_exits_2_naming_the_file(spark, tmp_path, case):
    run = kill_run(tmp_path / "run")
    named = {
        "no_dir": tmp_path / "missing",
        "no_manifest": run / "manifest.json",
        "bad_manifest": run / "manifest.json",
        "no_events": run / "events",
        "unreadable": run / "events" / "zz.jsonl",
    }[case]
    target = named if case == "no_dir" else run
    if case == "no_manifest":
        (run / "manifest.json").unlink()
    elif case == "bad_manifest":
        (run / "manifest.json").write_text('{"run": "r1", "scale": ')
    elif case == "no_events":
        shutil.rmtree(run / "events")
    elif case == "unreadable":
        (run / "events" / "zz.jsonl").mkdir()  # a directory where a log file should be
    result = invoke(spark, str(target))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and str(named) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (run / "report").exists()


@pytest.mark.spark
def test_compare_names_a_corrupt_metrics_file(spark, reported, tmp_path):
    run_a, _ = reported
    run_b = tmp_path / "run-b"
    (run_b / "report").mkdir(parents=True)
    (run_b / "report" / "metrics.json").write_text('{"run": "r2", "scale"')
    result = invoke(spark, "--compare", str(run_a), str(run_b))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {run_b / 'report' / 'metrics.json'}: not valid JSON "
                             "(Expecting ':' delimiter at line 1)\n")


def test_without_java_the_error_says_what_spark_needs(tmp_path):
    """A real `rmqemu report` whose JAVA_HOME points nowhere: exit 3 (the job failed) and a line naming Java."""
    import os
    import subprocess
    import sys

    run = kill_run(tmp_path / "run")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    cli = [sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()"]
    out = subprocess.run([*cli, "report", str(run)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr[-2000:]
    assert "Spark needs Java 17 or newer" in out.stderr and str(tmp_path / "no-java") in out.stderr
