"""The transactions section of a report, end to end on the hand-made run dir of tests/core/tx_runs.py
(each number worked out in its docstring): metrics.json's ``transactions`` paths (every one
registered, every registered one written), an ``expect:`` over them, report.html's tables and the
one-line summary; and ``rmqemu report`` in Spark writing the section the local engine computes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rmqemu import metric_paths
from rmqemu.reports import html
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from rmqemu.reports.summary import headline_rows, one_line
from rmqemu.verdicts import judge, parse_expect
from tests.core.tx_runs import tx_run
from tests.reports.runlog import write_run
from tests.reports.test_verdicts_report import invoke, leaf_paths, with_topology_expect


def run_dir(root: Path) -> Path:
    """The run as a run dir: the injector's and launcher's lines in faults.jsonl."""
    lines = tx_run()
    faults = [x for x in lines if x["node"] in ("injector", "launcher")]
    events = [x for x in lines if x["node"] not in ("injector", "launcher")]
    return write_run(root, events, faults, scale=1.0)


@pytest.fixture(scope="module")
def doc(tmp_path_factory: Any) -> dict[str, Any]:
    return document(analyse_dirs([str(run_dir(tmp_path_factory.mktemp("tx") / "run"))])[0])


def test_the_transactions_section(doc: dict[str, Any]) -> None:
    x = doc["transactions"]
    assert x["halves"] == {"sent": 8, "stored": 9, "stored_again": 1}
    assert x["committed"] == {"total": 4, "first_hand": 2, "after_check": 2, "consumed": 4, "lost_per_group": 1,
                              "gone_per_group": 0}
    assert x["rolled_back"] == {"total": 3, "first_hand": 2, "after_check": 1, "delivered": 1}
    assert x["discarded"] == {"total": 1, "max_checks": 1, "expired": 0, "delivered": 0}
    assert x["open"] == {"total": 1, "delivered": 0}
    assert x["by_checks"] == [{"checks": 1, "committed": 1, "rolled_back": 1},
                              {"checks": 2, "committed": 1, "rolled_back": 0}]
    assert (x["visible"]["n"], x["visible"]["p50_ms"], x["visible"]["max_ms"], x["visible"]["max_cluster_s"]) == (
        4, 512.5, 1310.0, 1.31)
    assert x["duplicates"] == {"stored_twice": 2, "delivered_twice": 2, "by_cause": {
        "first_hand_and_check": 1, "checks_only": 1, "first_hand_only": 0}}
    assert x["checks"] == {"sent": 9, "no_channel": 3, "messages": 6}
    assert [(g["group"], g["committed"], g["consumed"], g["lost"]) for g in x["groups"]] == [
        ("cg-1", 4, 4, 0), ("cg-2", 4, 3, 1)]
    assert [(f["fault_id"], f["messages"], f["checks"], f["impact_end_offset_cluster_s"]) for f in x["faults"]] == [
        ("f2", 2, 0, 0.85), ("f1", 5, 8, 3.0)]
    # the loss metrics count no half that was never committed, and t7 (its send timed out) only as unacked
    c = doc["consumption"]
    assert (c["lost"], c["lost_per_group"], c["consumed_unacked"], c["duplicate_messages"]) == (0, 0, 2, 2)
    assert doc["misrouted"]["total"] == 0


def test_every_transactions_path_is_registered_and_written(doc: dict[str, Any]) -> None:
    got = {p for p in leaf_paths(doc) if p.startswith("transactions")}
    registry = metric_paths.all_paths()
    assert sorted(p for p in got if metric_paths.find(p) is None and p + "[]" not in registry) == []
    registered = [p for p in registry if p.startswith("transactions")]
    assert sorted(p for p in registered if p not in got) == []


def test_expectations_over_the_section(doc: dict[str, Any]) -> None:
    rules = parse_expect({"transactions.rolled_back.delivered": 0, "transactions.committed.lost_per_group": {"max": 1},
                          "transactions.duplicates.stored_twice": {"min": 1},
                          "transactions.visible.p99_cluster_s": {"max": 1}, "transactions.open.total": 1}, "expect")
    assert [v.passed for v in judge(rules, doc, "expect")] == [False, True, True, False, True]
    assert metric_paths.problem("transactions.checks.no_channel") is None
    assert "a group" in (metric_paths.problem("transactions.checks") or "")


def test_the_pages_tables_and_the_summary(doc: dict[str, Any], tmp_path: Path) -> None:
    page = html.render(doc, [], tmp_path, [], [])
    for title in ("Transactional messages", "Decided after checks", "Committed messages stored twice",
                  "Committed messages per consumer group", "Transactions per fault"):
        assert title in page, title
    line = one_line(doc)
    assert "2 transactional message(s) stored twice" in line and "1 rolled-back message(s) delivered" in line
    rows = {label: value for section, label, value in headline_rows(doc) if section == "Transactions"}
    assert rows["Delivered without a commit (rolled back, discarded or open)"] == "1"


@pytest.mark.spark
def test_rmqemu_report_writes_the_section_in_spark(spark: Any, tmp_path: Path) -> None:
    """The whole report (metrics.json, verdicts, report.html, Parquet) in Spark, judged by the run's
    topology's expectations over the section."""
    run = with_topology_expect(run_dir(tmp_path / "run"), {"transactions.rolled_back.delivered": {"max": 1},
                                                           "transactions.committed.total": 4})
    result = invoke(spark, str(run))
    assert result.exit_code == 0, result.output
    got = json.loads((run / "report" / "metrics.json").read_text())
    want = document(analyse_dirs([str(run)])[0])
    assert got["transactions"] == want["transactions"] and got["consumption"] == want["consumption"]
    assert got["transactions"]["duplicates"]["stored_twice"] == 2  # a value, not just a key
    assert "Transactions per fault" in (run / "report" / "report.html").read_text()
    table = pq.read_table(run / "report" / "parquet" / "transactions").to_pandas()
    assert sorted(table["msg_id"]) == [f"t{i}" for i in range(1, 10)]
