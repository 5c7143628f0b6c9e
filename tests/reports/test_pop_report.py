"""The RocketMQ 5 layer in a report, end to end on the hand-made run dir of tests/core/pop_runs.py (each
number worked out in its docstring): metrics.json's ``pop`` section, ``delays.timed`` and the staleness
holders (every path registered, every registered one written), an ``expect:`` over them, report.html's
tables; and ``rmqemu report`` in Spark writing what the local engine computes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rmqemu import metric_paths, metric_pop
from rmqemu.reports import html
from rmqemu.reports.core import pop, staleness
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from rmqemu.reports.summary import headline_rows, one_line
from rmqemu.verdicts import judge, parse_expect
from tests.core.pop_runs import pop_run
from tests.reports.runlog import write_run
from tests.reports.test_verdicts_report import invoke, leaf_paths, with_topology_expect

PREFIXES = ("pop", "delays.timed", "staleness.by_holder", "staleness.clients[].holder", "staleness.clients[].via")


def run_dir(root: Path) -> Path:
    """The run as a run dir: the injector's and launcher's lines in faults.jsonl."""
    lines = pop_run()
    faults = [x for x in lines if x["node"] in ("injector", "launcher")]
    return write_run(root, [x for x in lines if x not in faults], faults, scale=1.0)


@pytest.fixture(scope="module")
def doc(tmp_path_factory: Any) -> dict[str, Any]:
    return document(analyse_dirs([str(run_dir(tmp_path_factory.mktemp("pop") / "run"))])[0])


def test_the_pop_section(doc: dict[str, Any]) -> None:
    x = doc["pop"]
    assert x["leases"] == {"granted": 14, "fifo": 7, "from_retry": 4, "expired": 4, "redelivered": 4,
                           "revive_failed": 0}
    assert x["messages"] == {"leased": 10, "redelivered": 2, "acked": 9, "unacked": 1}
    assert x["attempts"] == {"once": 8, "twice": 1, "three_or_more": 1, "max": 4}
    assert x["acks"]["proxy"] == {"total": 12, "ok": 9, "expired": 1, "invalid": 1, "no_broker": 0, "timeout": 0,
                                  "refused": 1}
    assert (x["acks"]["broker"]["total"], x["acks"]["broker"]["not_out"]) == (10, 1)
    assert x["dlq"] == {"sent": 1, "failed": 0}
    assert {k: x["fifo"][k] for k in ("message_groups", "messages", "out_of_order", "unacked_previous")} == {
        "message_groups": 3, "messages": 7, "out_of_order": 1, "unacked_previous": 2}
    assert [(f["fault_id"], f["expired"], f["proxy_refused"]) for f in x["faults"]] == [("f1", 1, 1)]


def test_timed_messages_and_the_holders(doc: dict[str, Any]) -> None:
    t = doc["delays"]["timed"]
    assert (t["sent"], t["parked"], t["on_time"], t["early"], t["pending"], t["lateness_max_ms"]) == (
        3, 3, 1, 1, 1, 10.0)
    h = doc["staleness"]["by_holder"]
    assert (h["grpc"]["views"], h["grpc"]["stale_ms"], h["proxy"]["views"], h["proxy"]["max_ms"], h["client"]["views"]
            ) == (1, 400.0, 1, 400.0, 0)
    assert [(c["client"], c["holder"], c["via"]) for c in doc["staleness"]["clients"]] == [
        ("client@1", "grpc", "proxy-0"), ("proxy-0", "proxy", None)]
    assert doc["misrouted"]["by_reason"]["paused"] == 1 and doc["consumption"]["delayed"] == 1


def test_every_new_path_is_registered_and_written(doc: dict[str, Any]) -> None:
    got = {p for p in leaf_paths(doc) if p.startswith(PREFIXES)}
    registry = metric_paths.all_paths()
    assert sorted(p for p in got if metric_paths.find(p) is None and p + "[]" not in registry) == []
    registered = [p for p in registry if p.startswith(PREFIXES)]
    assert sorted(p for p in registered if p not in got) == []


def test_the_registry_names_the_reports_results() -> None:
    assert metric_pop.BROKER_ACK_RESULTS == pop.BROKER_ACK_RESULTS
    assert metric_pop.PROXY_ACK_RESULTS == pop.PROXY_ACK_RESULTS
    assert metric_pop.HOLDERS == staleness.HOLDERS


def test_expectations_over_the_layer(doc: dict[str, Any]) -> None:
    rules = parse_expect({"pop.fifo.out_of_order": 0, "pop.acks.proxy.expired": {"max": 1},
                          "delays.timed.early": 0, "staleness.by_holder.proxy.max_ms": {"max": 500},
                          "pop.attempts.max": {"max": 3}}, "expect")
    assert [v.passed for v in judge(rules, doc, "expect")] == [False, True, False, True, False]
    assert metric_paths.problem("pop.leases.expired") is None
    assert "a group" in (metric_paths.problem("pop.acks") or "")


def test_the_pages_tables_and_the_summary(doc: dict[str, Any], tmp_path: Path) -> None:
    page = html.render(doc, [], tmp_path, [], [])
    for text in ("POP consumption", "FIFO groups&#39; order", "POP consumption per fault", "Timed messages per topic",
                 "client@1 (gRPC, via proxy-0)", "proxy-0 (proxy)"):
        assert text in page, text
    line = one_line(doc)
    assert "1 FIFO message(s) out of send order" in line and "1 timed message(s) delivered early" in line
    rows = {label: value for section, label, value in headline_rows(doc) if section == "POP consumption"}
    assert rows["Acks a proxy refused as expired or invalid (INVALID_RECEIPT_HANDLE)"] == "2"


@pytest.mark.spark
def test_rmqemu_report_writes_the_layer_in_spark(spark: Any, tmp_path: Path) -> None:
    """The whole report in Spark, judged by the run's topology's expectations over the layer."""
    run = with_topology_expect(run_dir(tmp_path / "run"), {"pop.fifo.unacked_previous": 2,
                                                           "delays.timed.pending": {"max": 1}})
    result = invoke(spark, str(run))
    assert result.exit_code == 0, result.output
    got = json.loads((run / "report" / "metrics.json").read_text())
    want = document(analyse_dirs([str(run)])[0])
    for key in ("pop", "delays", "staleness", "misrouted", "consumption"):
        assert got[key] == want[key], key
    assert got["pop"]["leases"]["expired"] == 4  # a value, not just a key
    assert "POP consumption per fault" in (run / "report" / "report.html").read_text()
