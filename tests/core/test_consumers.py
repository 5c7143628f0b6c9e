"""Consumption, loss per group and subscriptions (reports.core.consumers, docs/design.md §7):
the cases of tests/reports/test_consumption.py and test_loss.py on inline frames, no JVM."""
from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rmqemu.reports.core import sends as sends_mod
from rmqemu.reports.core.analysis import analyse
from rmqemu.reports.core.consumers import (
    Messages,
    autocreate_coverage,
    consumption,
    group_loss,
    non_subscriber_queues,
    subscription_not_exist,
    subscriptions,
)
from rmqemu.reports.core.frame import RunInfo, events
from tests.reports.test_consumption import consume, consumption_events

T, U = "T", "U"


def ev(ts: float, node: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": kind, **fields}


def send(ts: float, topic: str, msg_id: str, outcome: str = "ok", producer: str = "pg-1-0") -> dict[str, Any]:
    return {"producer": producer, "ts": float(ts), "seq": 0, "msg_id": msg_id, "topic": topic, "broker": "broker-a",
            "broker_id": None, "queue_id": 0, "attempt": 1, "outcome": outcome, "code": 0, "latency_ms": 1.0,
            "error": None, "group": "pg-1"}


def sends(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(sends_mod.SEND_COLUMNS))


def rows(df: pd.DataFrame, *cols: str) -> list[tuple[Any, ...]]:
    out = [tuple(None if (v is not None and not isinstance(v, (tuple, str)) and pd.isna(v)) else v for v in r)
           for r in df[list(cols)].itertuples(index=False)]
    return sorted(out, key=lambda t: tuple((v is not None, v) for v in t))


@pytest.fixture(scope="module")
def run() -> tuple[pd.DataFrame, pd.DataFrame]:
    log = events(consumption_events())
    return log, sends_mod.sends(log)


def test_lost_duplicates_unacked(run) -> None:
    got = consumption(Messages(*run))
    assert list(got.columns) == ["topic", "acked", "consumed", "lost", "duplicate_messages",
                                 "duplicate_deliveries", "consumed_unacked"]
    # m4 lost; m5 never acked; m6 never sent; m2 twice by cg-1; nobody consumes U: not lost
    assert rows(got, *got.columns) == [(T, 4, 4, 1, 1, 1, 1), (U, 1, 0, 0, 0, 0, 0)]


def test_subscription_not_exist_pulls(run) -> None:
    got = subscription_not_exist(run[0])
    assert list(got.columns) == ["node", "group", "topic", "pulls"]
    assert rows(got, *got.columns) == [("cg-1-1", "cg-1", T, 2)]


def test_queues_left_to_non_subscriber(run) -> None:
    got = non_subscriber_queues(run[0])
    assert list(got.columns) == ["group", "topic", "subscribers", "non_subscribers", "queues", "unowned_queues"]
    assert rows(got, *got.columns) == [("cg-1", T, ("cg-1-0@1",), ("cg-1-1@1",), 4, 2)]


def test_a_message_acked_after_run_stop_is_not_lost() -> None:
    log = events([ev(0, "cg-1-0", "rebalance", group="cg-1", topic=T), consume(1, "cg-1-0", "cg-1", ["m1"])])
    s = sends([send(100, T, "m1"), send(200, T, "m2"), send(250, T, "m3", "timeout"), send(400, T, "m3")])
    assert rows(consumption(Messages(log, s, until=300.0)), "topic", "acked", "lost") == [(T, 3, 1)]  # m2; m3 after
    assert rows(consumption(Messages(log, s)), "topic", "acked", "lost") == [(T, 3, 2)]  # no run.stop: both


# --- tests/reports/test_loss.py ----------------------------------------------------------------------

CONSUMERS = {"cg-1-0": "cg-1", "cg-2-0": "cg-2", "cg-3-0": "cg-3"}


def lconsume(ts: float, node: str, msg_ids: list[str], name: str) -> dict[str, Any]:
    return ev(ts, node, "consume", group=CONSUMERS[node], topic=name, broker="broker-a", queue_id=0, msg_ids=msg_ids)


def lrebalance(ts: float, node: str, name: str) -> dict[str, Any]:
    return ev(ts, node, "rebalance", group=CONSUMERS[node], topic=name, cid=f"{node}@1", cids=[f"{node}@1"],
              strategy="AVG", allocated=[["broker-a", 0]])


@pytest.fixture(scope="module")
def loss_run() -> tuple[pd.DataFrame, pd.DataFrame]:
    log = events([
        lrebalance(1100, "cg-1-0", T), lrebalance(1100, "cg-1-0", "%RETRY%cg-1"),
        lrebalance(1100, "cg-2-0", T), lrebalance(1100, "cg-2-0", "%RETRY%cg-2"), lrebalance(1100, "cg-3-0", U),
        ev(1200, "pg-1-0", "send", group="pg-1", topic=T, msg_id="m1", outcome="ok"),
        lconsume(2000, "cg-1-0", ["m1", "m2", "m3"], T), lconsume(2000, "cg-2-0", ["m1"], T),
        lconsume(2100, "cg-3-0", ["u1"], U), lconsume(2500, "cg-2-0", ["m2"], "%RETRY%cg-2"),
        lconsume(9150, "cg-1-0", ["m4"], T),
    ])
    s = sends([send(1200, T, "m1"), send(1300, T, "m2"), send(1400, T, "m3", "timeout"), send(1500, T, "m3"),
               send(1600, U, "u1"), send(9100, T, "m4")])
    return log, s


def test_a_message_one_subscribing_group_missed_is_lost_for_it_only(loss_run) -> None:
    log, s = loss_run
    assert consumption(Messages(log, s, until=9000.0))["lost"].sum() == 0  # m3 was consumed by cg-1
    got = group_loss(Messages(log, s, until=9000.0))
    assert list(got.columns) == ["group", "topic", "expected", "consumed", "lost"]
    # cg-2: m2 counts via %RETRY%cg-2; cg-1: m4 acked after run.stop; (cg-3, T) and %RETRY% not charged
    assert rows(got, *got.columns) == [("cg-1", T, 3, 3, 0), ("cg-2", T, 3, 2, 1), ("cg-3", U, 1, 1, 0)]
    assert got["lost"].sum() == 1


def test_a_pull_alone_shows_a_subscription() -> None:
    log = events([ev(0, "c9", "pull", group="cg-9", topic=T), ev(1, "c8", "consume", group="cg-8", topic=T,
                                                                msg_ids=["m1"]),
                  ev(2, "p1", "send", group="pg-1", topic=T)])
    s = sends([send(100, T, "m1"), send(200, T, "m2"), send(300, T, "m3", "error")])
    assert rows(group_loss(Messages(log, s)), "group", "topic", "expected", "consumed", "lost") == [
        ("cg-8", T, 2, 1, 1), ("cg-9", T, 2, 0, 2)]
    assert rows(subscriptions(log), "group", "topic") == [("cg-8", T), ("cg-9", T)]


# --- a real orderly client's unheld deliveries (docs/design.md §7 "Consumption", "Order") --------------------

def test_an_unheld_line_is_consumed_but_never_a_duplicate() -> None:
    """m1 is delivered to cg-1 twice, once by a line marked unheld: consumed, not a duplicate;
    m2 twice by held lines: a duplicate."""
    log = events([ev(1, "c1", "consume", group="cg-1", topic=T, msg_ids=["m1"]),
                  ev(2, "c1", "rebalance", group="cg-1", topic=T),
                  ev(3, "c2", "consume", group="cg-1", topic=T, msg_ids=["m1", "m2"]),
                  ev(4, "c2", "consume", group="cg-1", topic=T, msg_ids=["m2"])])
    s = sends([send(0, T, "m1"), send(0, T, "m2")])
    cols = ("topic", "consumed", "lost", "duplicate_messages", "duplicate_deliveries")
    assert rows(consumption(Messages(log, s, unheld=[True, False, False, False])), *cols) == [(T, 2, 0, 1, 1)]
    assert rows(consumption(Messages(log, s)), *cols) == [(T, 2, 0, 2, 2)]


def real_orderly_run() -> list[dict[str, Any]]:
    """Group rg of real clients, seen only from broker-a-0's lock lines on queue a:0: client@1
    holds it from 1 until it unlocks at 5, client@2 from 6. client@1 is delivered x1 at 2; the
    pull it gave up in the rebalance is answered with x2 at 7 (unheld: it drops it); client@2 is
    delivered x2 at 8, then x3 at 9 and x3 again at 10 (a redelivery while it holds the queue)."""
    def block(ts: float, peer: str, change: str) -> dict[str, Any]:
        return ev(ts, "broker-a-0", "broker.lock", group="rg", topic=T, broker="broker-a", queue_id=0,
                  client_id=f"ip@{peer}", peer=peer, change=change)

    def deliver(ts: float, node: str, msg: str, offset: int) -> dict[str, Any]:
        return ev(ts, node, "consume", group="rg", topic=T, broker="broker-a", queue_id=0, msg_ids=[msg],
                  offsets=[offset])
    return [ev(0, "broker-a-0", "node.start", role="broker", broker="broker-a", broker_id=0),
            ev(0, "broker-a-0", "broker.topic", broker="broker-a", broker_id=0, topic=T, read_queues=1,
               write_queues=1, perm=6, how="admin"),
            *[ev(0.5, "pg-0", "send", group="pg", topic=T, msg_id=m, broker="broker-a", queue_id=0, attempt=1,
                 outcome="ok", code=0, latency_ms=0.1) for m in ("x1", "x2", "x3")],
            block(1, "client@1", "locked"), deliver(2, "client@1", "x1", 0), block(5, "client@1", "unlocked"),
            block(6, "client@2", "locked"), deliver(7, "client@1", "x2", 1), deliver(8, "client@2", "x2", 1),
            deliver(9, "client@2", "x3", 2), deliver(10, "client@2", "x3", 2)]


def test_the_duplicates_leave_out_what_the_order_checker_counts_unheld() -> None:
    """x2's delivery to client@1 at 7 is unheld: x2 is consumed once, not a duplicate (the count
    before: 2 duplicate messages, 2 deliveries); x3, delivered twice to its holder, still is; the
    order checker leaves the same one delivery out."""
    log = events(real_orderly_run())
    t = analyse(log, RunInfo.of(log), {})
    assert rows(t["m.consumption"], "topic", "acked", "consumed", "lost", "duplicate_messages",
                "duplicate_deliveries") == [(T, 3, 3, 0, 1, 1)]
    assert rows(t["m.order_groups"], "group", "by", "messages", "duplicates", "unheld") == [("rg", "queue", 3, 1, 1)]


# --- edge cases ------------------------------------------------------------------------------------------

def test_empty_inputs_give_empty_tables_with_the_columns() -> None:
    log, s = events([ev(0, "x", "node.start", role="broker")]).iloc[:0], sends([])
    got = consumption(Messages(log, s))
    assert list(got.columns)[-1] == "consumed_unacked" and got.empty
    assert group_loss(Messages(log, s)).empty and subscriptions(log).empty
    assert subscription_not_exist(log).empty and list(subscription_not_exist(log).columns)[-1] == "pulls"
    nsq = non_subscriber_queues(log)
    assert nsq.empty and list(nsq.columns)[-1] == "unowned_queues"


def test_latest_rebalance_by_ts_then_seq_and_null_msg_ids() -> None:
    """Two rebalances at one ts: the later line wins; a consume without msg_ids delivers nothing;
    a message consumed but never acked counts as consumed_unacked."""
    log = events([
        ev(5, "c1", "rebalance", group="g", topic=T, cid="c1@1", cids=["c1@1", "c2@1"], allocated=[["b", 0]]),
        ev(5, "c1", "rebalance", group="g", topic=T, cid="c1@1", cids=["c1@1"], allocated=[["b", 0]]),
        ev(6, "c1", "consume", group="g", topic=T), ev(7, "c1", "consume", group="g", topic=T, msg_ids=["x"]),
    ])
    assert rows(non_subscriber_queues(log), "subscribers", "non_subscribers", "queues", "unowned_queues") == [
        (("c1@1",), (), 1, 0)]
    assert rows(consumption(Messages(log, sends([]))), "topic", "acked", "consumed", "lost", "consumed_unacked") == [
        (T, 0, 1, 0, 1)]


def test_autocreate_coverage_counts_the_auto_masters_hosting_each_auto_created_topic() -> None:
    nodes = pd.DataFrame({"node": ["broker-a-0", "broker-b-0", "broker-c-0", "broker-a-1"],
                          "role": ["broker"] * 4, "broker": ["broker-a", "broker-b", "broker-c", "broker-a"],
                          "broker_id": pd.array([0, 0, 0, 1], dtype="Int64"), "group": [None] * 4,
                          "auto_create": pd.array([None, True, None, True], dtype="boolean")})
    log = events([
        ev(1, "broker-a-0", "broker.topic", broker="broker-a", broker_id=0, topic="A", perm=6, how="auto"),
        ev(1, "broker-a-1", "broker.topic", broker="broker-a", broker_id=1, topic="B", perm=6, how="auto"),
        ev(1, "broker-c-0", "broker.topic", broker="broker-c", broker_id=0, topic="C", perm=6, how="admin"),
    ])
    host_iv = pd.DataFrame({"node": ["broker-a-0", "broker-b-0", "broker-c-0", "broker-a-1"],
                            "topic": ["A", "A", "A", "A"], "broker": ["broker-a", "broker-b", "broker-c", "broker-a"],
                            "broker_id": pd.array([0, 0, 0, 1], dtype="Int64"),
                            "start": [1.0] * 4, "end": [9.0] * 4})
    auto_iv = pd.DataFrame({"node": ["broker-a-0", "broker-a-1"], "start": [0.0, 0.0], "end": [9.0, 9.0]})
    got = autocreate_coverage(log, nodes, host_iv, auto_iv)
    assert list(got.columns) == ["topic", "created_on", "hosted_on", "auto_masters", "hosts", "of_auto_masters"]
    assert rows(got, *got.columns) == [
        ("A", ("broker-a",), ("broker-a", "broker-b", "broker-c"), ("broker-a", "broker-b"), 3, 2)]
    empty = autocreate_coverage(log.iloc[:0], nodes.iloc[:0], host_iv.iloc[:0], auto_iv.iloc[:0])
    assert empty.empty and list(empty.columns) == list(got.columns)
