"""Check-backs on real processes (docs/rocketmq-model.md §9): topologies/seed-transaction-checkback.yaml
as ``rmqemu launch`` runs it (a producer killed with open transactions, a master killed between
halves and their ends), judged by its own ``expect:`` in Spark and checked against the run's events;
and its fault-free control, topologies/transaction-control.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqemu.emulator.testing import expect_metrics, read_events
from tests.eventdoc import contract_problems
from tests.integration.test_dledger_seed import launched

SECTIONS = ["transactions", "consumption", "drain"]


def test_check_backs_resolve_what_a_killed_producer_and_master_left_open(tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo, rd = launched("seed-transaction-checkback", tmp_path / "run")
    m = metrics(rmqemu_spark, str(rd), only=SECTIONS)
    expect_metrics(m, topo.expect or {}, rd)
    starts = {e["targets"][0]: e["ts"] for e in read_events(rd, "fault.start") if e["fault"] == "kill"}
    # the killed producer's halves were answered by the other one: checks went to pg-tx-1 only after the kill
    after = [e for e in read_events(rd, "tx.check") if e["ts"] > starts["pg-tx-0"] and e["client_id"]]
    assert after and all(e["client_id"].endswith("@pg-tx-1") for e in after)
    killed_halves = {e["msg_id"] for e in read_events(rd, "tx.local") if e["node"] == "pg-tx-0"
                     and not e["from_check"] and e["state"] == "UNKNOW"}
    answered_by_other = {e["msg_id"] for e in read_events(rd, "tx.local") if e["node"] == "pg-tx-1" and e["from_check"]}
    assert killed_halves & answered_by_other, "no half of the killed producer was answered by its group's other one"
    # the killed master checked, after its restart, halves it had stored before its kill
    restarted = max(e["ts"] for e in read_events(rd, "node.start", node="broker-a-0"))
    killed = starts["broker-a-0"]
    stored_before = {e["msg_id"] for e in read_events(rd, "tx.half", node="broker-a-0") if e["ts"] < killed}
    checked_after = {e["msg_id"] for e in read_events(rd, "tx.check", node="broker-a-0") if e["ts"] > restarted}
    assert stored_before & checked_after, "the restarted master checked none of the halves it held"
    t = m["transactions"]
    assert t["committed"]["total"] + t["rolled_back"]["total"] + t["open"]["total"] == t["halves"]["stored"]
    assert contract_problems(rd) == []


def test_the_fault_free_control_checks_only_unknown_halves_once(tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo, rd = launched("transaction-control", tmp_path / "run")
    m = metrics(rmqemu_spark, str(rd), only=SECTIONS)
    expect_metrics(m, topo.expect or {}, rd)
    stop = read_events(rd, "run.stop")[0]["ts"]
    unknown = {e["msg_id"] for e in read_events(rd, "tx.local") if not e["from_check"] and e["state"] == "UNKNOW"}
    checked = [e["msg_id"] for e in read_events(rd, "tx.check") if e["ts"] < stop]
    assert set(checked) <= unknown and len(checked) == len(set(checked))  # only UNKNOWN ones, each once
    assert m["transactions"]["checks"]["sent"] >= len(checked) > 0
