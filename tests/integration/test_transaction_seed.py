"""Transactional messages on real processes with rmqemu's own producers (docs/rocketmq-model.md §9):
topologies/seed-transaction-checkback.yaml as ``rmqemu launch`` runs it (producers killed with open
transactions, a master killed between halves and their ends) and its fault-free control,
topologies/transaction-control.yaml, each judged by its own ``expect:`` in Spark and checked
against the events of every side (the producers' ``tx.local``, the masters' ``tx.*``, ``consume``).

Every path a half takes: in the control, a first-hand commit is consumed once, a first-hand
rollback never is and is never checked, an UNKNOWN half is checked exactly once and goes the way
the answer says; in the seed, a killed producer's halves are answered by its group's other one,
the restarted master checks the halves it held, and the halves of a group left with no producer
are checked by nobody ``transactionCheckMax`` times, then discarded, never consumed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rmqemu.emulator.testing import expect_metrics, read_events
from tests.eventdoc import contract_problems
from tests.integration.test_dledger_seed import launched

SECTIONS = ["transactions", "consumption", "drain"]
DECIDED = {"COMMIT_MESSAGE": "commit", "ROLLBACK_MESSAGE": "rollback"}


def test_check_backs_resolve_what_killed_producers_and_a_killed_master_left_open(
        tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo, rd = launched("seed-transaction-checkback", tmp_path / "run")
    m = metrics(rmqemu_spark, str(rd), only=SECTIONS)
    expect_metrics(m, topo.expect or {}, rd)
    starts = {e["targets"][0]: e["ts"] for e in read_events(rd, "fault.start") if e["fault"] == "kill"}
    local = read_events(rd, "tx.local")
    stop = read_events(rd, "run.stop")[0]["ts"]  # then every producer unregisters: checks find no channel
    # the killed producer's halves were answered by the other one: checks went to pg-tx-1 only after the kill
    after = [e for e in read_events(rd, "tx.check") if starts["pg-tx-0"] < e["ts"] < stop and e["group"] == "pg-tx"]
    assert after and all(e["client_id"].endswith("@pg-tx-1") for e in after), after
    left = {e["msg_id"] for e in local if e["node"] == "pg-tx-0" and not e["from_check"] and e["state"] == "UNKNOW"}
    assert left & {e["msg_id"] for e in local if e["node"] == "pg-tx-1" and e["from_check"]}
    # the killed master checked, after its restart, halves it had stored before its kill
    restarted = max(e["ts"] for e in read_events(rd, "node.start", node="broker-a-0"))
    killed = starts["broker-a-0"]
    stored_before = {e["msg_id"] for e in read_events(rd, "tx.half", node="broker-a-0") if e["ts"] < killed}
    checked_after = {e["msg_id"] for e in read_events(rd, "tx.check", node="broker-a-0") if e["ts"] > restarted}
    assert stored_before & checked_after, "the restarted master checked none of the halves it held"
    # pg-solo's halves after its only producer died: checked by nobody, counted, given up after 5
    discards = {e["msg_id"]: e for e in read_events(rd, "tx.discard")}
    assert discards and all(e["group"] == "pg-solo" and e["reason"] == "max_checks" and e["check_times"] == 5
                            for e in discards.values()), discards
    for msg_id in discards:
        times = [(e["check_times"], e["client_id"]) for e in read_events(rd, "tx.check") if e["msg_id"] == msg_id]
        assert [n for n, _ in times] == [1, 2, 3, 4, 5][-len(times):] and times[-1][1] is None, (msg_id, times)
    consumed = {i for e in read_events(rd, "consume") for i in e["msg_ids"]}
    assert not consumed & set(discards)
    t = m["transactions"]
    assert t["committed"]["total"] + t["rolled_back"]["total"] + t["discarded"]["total"] + t["open"]["total"] \
        == t["halves"]["stored"]
    assert contract_problems(rd) == []


def test_the_fault_free_control_takes_every_path_exactly(tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo, rd = launched("transaction-control", tmp_path / "run")
    m = metrics(rmqemu_spark, str(rd), only=SECTIONS)
    expect_metrics(m, topo.expect or {}, rd)
    stop = read_events(rd, "run.stop")[0]["ts"]
    checks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in read_events(rd, "tx.check"):
        checks[e["msg_id"]].append(e)
    ends: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in read_events(rd, "tx.end"):
        if e["result"] == "ok":
            ends[e["msg_id"]].append(e)
    answers = {e["msg_id"]: e["state"] for e in read_events(rd, "tx.local") if e["from_check"]}
    consumed = Counter(i for e in read_events(rd, "consume") for i in e["msg_ids"])
    halves = {e["msg_id"] for e in read_events(rd, "tx.half")}
    # the halves decided well before the run stopped (a check comes 60-120 cluster s after a half)
    judged = {e["msg_id"]: e["state"] for e in read_events(rd, "tx.local")
              if not e["from_check"] and e["ts"] < stop - 1.5 * 1000}
    assert set(Counter(judged.values())) == {"COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"}, judged
    for msg_id, state in judged.items():
        assert msg_id in halves, msg_id
        if state == "UNKNOW":
            (check,) = checks[msg_id]  # checked exactly once: the answer ended it
            assert check["client_id"] is not None and check["check_times"] == 1 and check["age_ms"] >= 6000
            decided, by_check = DECIDED[answers[msg_id]], True
        else:
            assert msg_id not in checks, (msg_id, checks[msg_id])  # ended first-hand: never checked
            decided, by_check = DECIDED[state], False
        assert [(e["action"], e["from_check"]) for e in ends[msg_id]] == [(decided, by_check)], ends[msg_id]
        # delivered iff committed; a second delivery is 4.x's at-least-once when the second consumer's
        # rebalance takes a queue before the first persisted its offset, not the transaction's doing:
        # the expect's transactions.duplicates.* rules hold the transaction's own duplicates at 0
        assert bool(consumed[msg_id]) == (decided == "commit"), (msg_id, state, decided)
    committed = {i for i, es in ends.items() if any(e["action"] == "commit" for e in es)}
    assert set(consumed) <= committed  # nothing but committed messages reached a consumer
    assert m["transactions"]["checks"]["sent"] >= sum(1 for s in judged.values() if s == "UNKNOW") > 0
