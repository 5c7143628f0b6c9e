"""The order checker (reports.core.order, order_locks, order_routes) on hand-made logs: the
exact counts and causes of each kind of violation (remapped, handover, redelivery, duplicates),
the route change behind a remap and whether the route was stale, the failed ordered sends and
the keys' availability, a real client's orderly consumption checked per queue, and zero for a
correct history. Times are ms; every number is worked out in the test's docstring."""
from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rmqemu import metric_order
from rmqemu.reports.core.analysis import (
    NODE_COLUMNS,
    NODE_KINDS,
    TRUTH_COLUMNS,
    combine,
    concat,
    node_part,
    run_truth,
)
from rmqemu.reports.core.frame import RunInfo, events
from rmqemu.reports.core.order import CAUSES, deliveries
from rmqemu.reports.core.order_locks import CLIENT_LOCK_MS, holds, lock_lines
from rmqemu.reports.results import rows
from tests.core.analysed import analysed

T = "T"


def start(ts: float, node: str, **f: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "node.start", **f}


def brokers(*names: str) -> list[dict[str, Any]]:
    """Masters ``broker-x-0`` up at 0, hosting T (perm 6, 4 queues)."""
    out = []
    for b in names:
        out += [start(0.0, f"{b}-0", role="broker", broker=b, broker_id=0),
                {"ts": 0.0, "node": f"{b}-0", "kind": "broker.topic", "broker": b, "broker_id": 0, "topic": T,
                 "read_queues": 4, "write_queues": 4, "perm": 6, "how": "admin"}]
    return out


def send(ts: float, msg: str, key: str, broker: str | None, qid: int | None, outcome: str = "ok",
         node: str = "pg-0", latency: float | None = 0.5) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "send", "msg_id": msg, "topic": T, "broker": broker, "queue_id": qid,
            "attempt": 1, "outcome": outcome, "code": 0 if outcome == "ok" else None, "latency_ms": latency,
            "group": "pg", "sharding_key": key, "route_queues": 2}


def consume(ts: float, node: str, msgs: list[str], broker: str, qid: int, offsets: list[int] | None = None,
            group: str = "cg", topic: str = T, orderly: bool | None = True) -> dict[str, Any]:
    line = {"ts": ts, "node": node, "kind": "consume", "group": group, "topic": topic, "broker": broker,
            "queue_id": qid, "msg_ids": msgs, "orderly": orderly}
    return line if offsets is None else {**line, "offsets": offsets}


def lock(ts: float, node: str, change: str, broker: str, qid: int, group: str = "cg", **f: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "orderly.lock", "group": group, "topic": T, "broker": broker,
            "queue_id": qid, "client_id": f"ip@{node}", "change": change, **f}


def block(ts: float, node: str, peer: str, change: str, broker: str, qid: int, group: str = "rg") -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "broker.lock", "group": group, "topic": T, "broker": broker,
            "queue_id": qid, "client_id": f"ip@{peer}", "peer": peer, "change": change}


def route(ts: float, queues: list[tuple[str, int]], node: str = "pg-0") -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "client.route", "topic": T, "source": "namesrv-0",
            "publish_queues": [{"broker": b, "queue_id": q} for b, q in queues], "changed": True, "group": "pg"}



def groups(t: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    return rows(t["m.order_groups"], ["group", "by"])


def causes(t: dict[str, pd.DataFrame]) -> list[tuple]:
    v = t["order_violations"]
    return sorted(zip(v["unit"], v["msg_id"], v["violation"], v["cause"], v["earlier"], strict=True))


def test_a_correct_history_has_no_violation() -> None:
    """Two keys on two queues; cg-0 gives queue b:0 up (dropped at 10) and cg-1 takes it at 11
    from the next offset: 6 messages, all consumed once, in send order."""
    t = analysed([*brokers("broker-a", "broker-b"), route(0.5, [("broker-a", 0), ("broker-b", 0)]),
                  send(1, "m1", "k1", "broker-a", 0), send(2, "m2", "k2", "broker-b", 0),
                  send(3, "m3", "k1", "broker-a", 0), send(4, "m4", "k2", "broker-b", 0),
                  send(12, "m5", "k1", "broker-a", 0), send(13, "m6", "k2", "broker-b", 0),
                  lock(0.5, "cg-0", "locked", "broker-a", 0), lock(0.5, "cg-0", "locked", "broker-b", 0),
                  consume(2, "cg-0", ["m1"], "broker-a", 0, [0]), consume(3, "cg-0", ["m2"], "broker-b", 0, [0]),
                  consume(4, "cg-0", ["m3"], "broker-a", 0, [1]), consume(5, "cg-0", ["m4"], "broker-b", 0, [1]),
                  lock(10, "cg-0", "dropped", "broker-b", 0, locked=True, cached=0, unlock_delay_ms=0.0),
                  lock(11, "cg-1", "locked", "broker-b", 0),
                  consume(13, "cg-0", ["m5"], "broker-a", 0, [2]), consume(14, "cg-1", ["m6"], "broker-b", 0, [2])])
    assert groups(t) == [{"group": "cg", "by": "key", "units": 2, "violated": 0, "messages": 6, "consumed": 6,
                          "out_of_order": 0, "duplicates": 0, "remapped": 0, "handover": 0, "redelivery": 0,
                          "unheld": 0}]
    assert t["order_violations"].empty and t["m.order_remaps"].empty and t["m.order_failed"].empty
    assert rows(t["m.order_availability"]) == [{"topic": T, "keys": 2, "unavailable_keys": 0, "windows": 0,
                                                "total_ms": 0.0, "max_ms": 0.0}]


def remap_run() -> list[dict[str, Any]]:
    """broker-a-0 dies at 3; pg-0's route drops it at 5 (stale over [3, 5)). Key k: m1 on a:0
    (acked at 2), an attempt on a:0 that left at 3.5 and timed out at 4 (target dead, route
    stale), m2 on b:0 (left at 5.5, acked at 6). cg-1 holds b:0 and consumes m2 at 7; m1 waits
    in a:0 until broker-a is back and cg-0 consumes it at 20."""
    return [*brokers("broker-a", "broker-b"), {"ts": 3.0, "node": "broker-a-0", "kind": "node.exit"},
            start(15.0, "broker-a-0", role="broker", broker="broker-a", broker_id=0),
            {"ts": 15.0, "node": "broker-a-0", "kind": "broker.topic", "broker": "broker-a", "broker_id": 0,
             "topic": T, "read_queues": 4, "write_queues": 4, "perm": 6, "how": "restore"},
            route(1, [("broker-a", 0), ("broker-b", 0)]), route(5, [("broker-b", 0)]), route(5.2, [("broker-b", 0)]),
            send(2, "m1", "k", "broker-a", 0), send(4, "mx", "k", "broker-a", 0, "timeout"),
            send(6, "m2", "k", "broker-b", 0),
            lock(1, "cg-0", "locked", "broker-a", 0), lock(1, "cg-1", "locked", "broker-b", 0),
            consume(7, "cg-1", ["m2"], "broker-b", 0, [0]), consume(20, "cg-0", ["m1"], "broker-a", 0, [0]),
            {"ts": 30.0, "node": "launcher", "kind": "run.stop"}]


def test_a_remap_is_the_route_change_that_moved_the_key() -> None:
    t = analysed(remap_run())
    assert groups(t) == [{"group": "cg", "by": "key", "units": 1, "violated": 1, "messages": 2, "consumed": 2,
                          "out_of_order": 1, "duplicates": 0, "remapped": 1, "handover": 0, "redelivery": 0,
                          "unheld": 0}]
    assert causes(t) == [("k", "m2", "out_of_order", "remapped", "m1")]
    assert t["order_violations"]["change"].tolist() == [5.0]
    # the change of 5 moved k (the line at 5.2 repeats the route: no change); the view was stale until it
    assert rows(t["m.order_remaps"]) == [{
        "producer": "pg-0", "topic": T, "ts": 5.0, "before": ["broker-a", "broker-b"], "after": ["broker-b"],
        "queues_before": 2, "queues_after": 1, "stale_before": True, "stale_after": False, "keys": 1,
        "out_of_order": 1}]
    # the failed attempt: its target was dead and pg-0's route still listed it when it left (3.5)
    assert rows(t["m.order_failed"]) == [{"reason": "dead", "outcome": "timeout", "stale": True, "sends": 1}]
    # k could not be sent from the timeout (4) to the next ok (6)
    assert rows(t["m.order_availability"]) == [{"topic": T, "keys": 1, "unavailable_keys": 1, "windows": 1,
                                                "total_ms": 2.0, "max_ms": 2.0}]


def handover_run() -> list[dict[str, Any]]:
    """Queue a:0 (key k): cg-0 holds it from 1 and its local lock runs out at 20 - 500 x 0.01 =
    15 (noticed at 20); cg-1 locks it at 10 (a restarted broker forgot cg-0) and consumes from
    offset 0 again: m1 and m2, first consumed by cg-0, are duplicates by handover. Queue a:3
    (key k4): cg-1 holds it from 2 and consumes m7 at 4; cg-0, holding it from 1, consumes the
    earlier m6 at 6: m7 is out of order by handover."""
    return [*brokers("broker-a"), route(0.5, [("broker-a", 0)]),
            send(1, "m1", "k", "broker-a", 0), send(2, "m2", "k", "broker-a", 0),
            send(3, "m3", "k", "broker-a", 0), send(1.5, "m6", "k4", "broker-a", 3),
            send(2.5, "m7", "k4", "broker-a", 3),
            lock(1, "cg-0", "locked", "broker-a", 0), lock(1, "cg-0", "locked", "broker-a", 3),
            lock(2, "cg-1", "locked", "broker-a", 3), lock(10, "cg-1", "locked", "broker-a", 0),
            lock(20, "cg-0", "expired", "broker-a", 0, late_ms=500.0),
            consume(2, "cg-0", ["m1"], "broker-a", 0, [0]), consume(11, "cg-0", ["m2"], "broker-a", 0, [1]),
            consume(12, "cg-1", ["m1"], "broker-a", 0, [0]), consume(13, "cg-1", ["m2"], "broker-a", 0, [1]),
            consume(14, "cg-1", ["m3"], "broker-a", 0, [2]), consume(4, "cg-1", ["m7"], "broker-a", 3, [1]),
            consume(6, "cg-0", ["m6"], "broker-a", 3, [0])]


def test_handover_duplicates_and_the_out_of_order_message_of_overlapping_holders() -> None:
    t = analysed(handover_run(), scale=0.01)
    assert causes(t) == [("k", "m1", "duplicate", "handover", None), ("k", "m2", "duplicate", "handover", None),
                         ("k4", "m7", "out_of_order", "handover", "m6")]
    assert groups(t) == [{
        "group": "cg", "by": "key", "units": 2, "violated": 2, "messages": 5, "consumed": 5, "out_of_order": 1,
        "duplicates": 2, "remapped": 0, "handover": 3, "redelivery": 0, "unheld": 0}]


def test_redeliveries_the_same_consumer_a_later_holder_and_a_retry() -> None:
    """k1: cg-0 consumes m1 twice (2, 4): redelivery. k2: cg-0 consumes m3 at 3 and gives a:1
    up at 10; cg-1, holding it from 12, consumes m3 again at 13: the holds do not overlap, so a
    redelivery. k3: cg-0 consumes m5 (a:2) at 5, the earlier m4 only at 8 through %RETRY%cg:
    m5 is out of order, by redelivery."""
    t = analysed([*brokers("broker-a"), route(0.5, [("broker-a", 0)]),
                  send(1, "m1", "k1", "broker-a", 0), send(1, "m3", "k2", "broker-a", 1),
                  send(1, "m4", "k3", "broker-a", 2), send(2, "m5", "k3", "broker-a", 2),
                  lock(1, "cg-0", "locked", "broker-a", 0), lock(1, "cg-0", "locked", "broker-a", 1),
                  lock(1, "cg-0", "locked", "broker-a", 2),
                  lock(10, "cg-0", "dropped", "broker-a", 1, locked=True, cached=0, unlock_delay_ms=0.0),
                  lock(12, "cg-1", "locked", "broker-a", 1),
                  consume(2, "cg-0", ["m1"], "broker-a", 0, [0]), consume(4, "cg-0", ["m1"], "broker-a", 0, [0]),
                  consume(3, "cg-0", ["m3"], "broker-a", 1, [0]), consume(13, "cg-1", ["m3"], "broker-a", 1, [0]),
                  consume(5, "cg-0", ["m5"], "broker-a", 2, [1]),
                  consume(8, "cg-0", ["m4"], "broker-a", 0, [0], topic="%RETRY%cg")])
    assert causes(t) == [("k1", "m1", "duplicate", "redelivery", None), ("k2", "m3", "duplicate", "redelivery", None),
                         ("k3", "m5", "out_of_order", "redelivery", "m4")]
    assert groups(t) == [{"group": "cg", "by": "key", "units": 3, "violated": 3, "messages": 4, "consumed": 4,
                          "out_of_order": 1, "duplicates": 2, "remapped": 0, "handover": 0, "redelivery": 3,
                          "unheld": 0}]


def real_client_run() -> list[dict[str, Any]]:
    """Group rg (no orderly flag: it locks queues): client@1 locks a:0 at 1 and is delivered
    offsets 0-2 at 2; broker-a-0 restarts (exit 5) and client@2 locks a:0 at 7: delivered 1-3
    at 8 while client@1's own lock may last until 5 + 30 s: offsets 1 and 2 are duplicates by
    handover. Then client@2 is delivered 6 at 10 and 5 at 11: offset 6 is out of order, by
    redelivery (one consumer). Six offsets checked, no sharding key known."""
    return [*brokers("broker-a"), block(1, "broker-a-0", "client@1", "locked", "broker-a", 0),
            consume(2, "client@1", ["x0", "x1", "x2"], "broker-a", 0, [0, 1, 2], group="rg", orderly=None),
            {"ts": 5.0, "node": "broker-a-0", "kind": "node.exit"},
            start(6.0, "broker-a-0", role="broker", broker="broker-a", broker_id=0),
            block(7, "broker-a-0", "client@2", "locked", "broker-a", 0),
            consume(8, "client@2", ["x1", "x2", "x3"], "broker-a", 0, [1, 2, 3], group="rg", orderly=None),
            consume(10, "client@2", ["x6"], "broker-a", 0, [6], group="rg", orderly=None),
            consume(11, "client@2", ["x5"], "broker-a", 0, [5], group="rg", orderly=None)]


def test_a_real_clients_queue_is_checked_in_offset_order_with_the_brokers_lock_holders() -> None:
    t = analysed(real_client_run())
    unit = f"{T}:broker-a:0"
    assert causes(t) == [(unit, "x1", "duplicate", "handover", None), (unit, "x2", "duplicate", "handover", None),
                         (unit, "x6", "out_of_order", "redelivery", "x5")]
    assert groups(t) == [{"group": "rg", "by": "queue", "units": 1, "violated": 1, "messages": 6, "consumed": 6,
                          "out_of_order": 1, "duplicates": 2, "remapped": 0, "handover": 2, "redelivery": 1,
                          "unheld": 0}]


def unheld_run() -> list[dict[str, Any]]:
    """Group rg: client@1 locks a:0 at 1 and is delivered offsets 0, 1 at 2; a rebalance takes the
    queue away: it unlocks at 5 and client@2 locks it at 6. client@1's pull, still held by the
    broker, is answered with offset 2 at 7 (the client drops it); client@2 is delivered 2 and 3 at
    7.5. client@2 is delivered offset 0 of a:1, which it never locked, at 9. Group cg: cg-0 (an
    emulated consumer: its own lock lines, its consume lines are its listener's) consumes b:0
    offset 0 at 3, after its lock was dropped at 2: consumed all the same."""
    return [*brokers("broker-a", "broker-b"), block(1, "broker-a-0", "client@1", "locked", "broker-a", 0),
            consume(2, "client@1", ["x0", "x1"], "broker-a", 0, [0, 1], group="rg", orderly=None),
            block(5, "broker-a-0", "client@1", "unlocked", "broker-a", 0),
            block(6, "broker-a-0", "client@2", "locked", "broker-a", 0),
            consume(7, "client@1", ["x2"], "broker-a", 0, [2], group="rg", orderly=None),
            consume(7.5, "client@2", ["x2", "x3"], "broker-a", 0, [2, 3], group="rg", orderly=None),
            consume(9, "client@2", ["y0"], "broker-a", 1, [0], group="rg", orderly=None),
            lock(1, "cg-0", "locked", "broker-b", 0), lock(2, "cg-0", "dropped", "broker-b", 0),
            consume(3, "cg-0", ["z0"], "broker-b", 0, [0], orderly=True)]


def test_a_real_client_is_not_charged_with_what_it_was_delivered_from_a_queue_it_did_not_hold() -> None:
    t = analysed(unheld_run())
    assert t["order_violations"].empty
    zeros = {"violated": 0, "out_of_order": 0, "duplicates": 0, "remapped": 0, "handover": 0, "redelivery": 0}
    assert groups(t) == [{"group": "cg", "by": "queue", "units": 1, "messages": 1, "consumed": 1, **zeros, "unheld": 0},
                         {"group": "rg", "by": "queue", "units": 1, "messages": 4, "consumed": 4, **zeros, "unheld": 2}]


def test_holds_from_both_sides() -> None:
    """cg-0's own lines: locked 1, expired noticed at 20 with late_ms 500 at scale 0.01 (ran out
    at 15), locked again 30, its node.exit at 40 ends it. client@9, seen by the broker: locked 2,
    taken over by client@8 at 50 (then unlocked by client@8 at 60); the broker's exit at 70
    ends nothing more. cg-0's broker.lock lines are not used: its own lines are."""
    ev = events([start(0.0, "cg-0"), {"ts": 40.0, "node": "cg-0", "kind": "node.exit"},
                 start(0.0, "broker-a-0"), {"ts": 70.0, "node": "broker-a-0", "kind": "node.exit"},
                 lock(1, "cg-0", "locked", "broker-a", 0), lock(20, "cg-0", "expired", "broker-a", 0, late_ms=500.0),
                 lock(30, "cg-0", "locked", "broker-a", 0),
                 block(1, "broker-a-0", "cg-0", "locked", "broker-a", 0, group="cg"),
                 block(2, "broker-a-0", "client@9", "locked", "broker-a", 1, group="cg"),
                 block(50, "broker-a-0", "client@8", "taken_over", "broker-a", 1, group="cg"),
                 block(60, "broker-a-0", "client@8", "unlocked", "broker-a", 1, group="cg"),
                 {"ts": 100.0, "node": "x", "kind": "run.stop"}])
    from rmqemu.reports.core.truth import lives
    h = holds(lock_lines(ev), lives(ev, 100.0), 0.01, 100.0)
    got = sorted(zip(h["holder"], h["queue_id"], h["start"], h["end"], strict=True))
    assert got == [("cg-0", 0, 1.0, 15.0), ("cg-0", 0, 30.0, 40.0), ("client@8", 1, 50.0, 60.0),
                   ("client@9", 1, 2.0, 50.0)]


def test_a_real_clients_hold_outlives_its_brokers_restart_until_its_next_hold() -> None:
    ev = events([start(0.0, "broker-a-0"), {"ts": 5.0, "node": "broker-a-0", "kind": "node.exit"},
                 start(6.0, "broker-a-0"), block(1, "broker-a-0", "client@1", "locked", "broker-a", 0),
                 block(9, "broker-a-0", "client@1", "locked", "broker-a", 0),
                 block(2, "broker-a-0", "client@2", "locked", "broker-a", 1)])
    from rmqemu.reports.core.truth import lives
    h = holds(lock_lines(ev), lives(ev, 1e6), 1.0, 1e6)
    got = sorted(zip(h["holder"], h["queue_id"], h["start"], h["end"], strict=True))
    assert got == [("client@1", 0, 1.0, 9.0), ("client@1", 0, 9.0, 1e6), ("client@2", 1, 2.0, 5.0 + CLIENT_LOCK_MS)]


@pytest.mark.parametrize("orderly", [None, False])
def test_a_group_that_neither_says_orderly_nor_locks_is_not_checked(orderly: bool | None) -> None:
    t = analysed([*brokers("broker-a"), send(1, "m1", "k", "broker-a", 0), send(2, "m2", "k", "broker-a", 0),
                  consume(3, "cg-0", ["m2"], "broker-a", 0, [1], orderly=orderly),
                  consume(4, "cg-0", ["m1"], "broker-a", 0, [0], orderly=orderly)])
    assert t["m.order_groups"].empty and t["order_violations"].empty


def test_the_registry_causes_are_the_checkers() -> None:
    assert metric_order.CAUSES == CAUSES


@pytest.mark.parametrize("lines", [remap_run(), handover_run(), real_client_run(), unheld_run()],
                         ids=["remap", "handover", "real", "unheld"])
def test_parts_of_one_node_each_give_the_order_of_all_nodes_together(lines: list[dict[str, Any]]) -> None:
    """The Spark engine may cut a run by node: the order tables, and the consumption duplicates
    that leave out the checker's unheld deliveries, must not change."""
    ev = events(lines)
    info = RunInfo.of(ev, 0.01)
    truth = run_truth(ev[list(TRUTH_COLUMNS)], info, {})
    mine = ev.loc[ev["kind"].isin(NODE_KINDS), list(NODE_COLUMNS)]
    whole = combine(concat([node_part(mine, truth, info)]), truth, info)
    parts = combine(concat([node_part(g, truth, info) for _, g in mine.groupby("node")]), truth, info)
    for name in ("m.order_groups", "m.order_remaps", "m.order_failed", "m.order_availability", "m.order_moved",
                 "m.consumption"):
        assert rows(parts[name]) == rows(whole[name]), name
    assert rows(whole["m.order_groups"])  # each run has something to check


def test_deliveries_take_a_lines_offsets_only_when_it_has_one_per_message() -> None:
    ev = events([consume(1, "cg-0", ["a", "b"], "broker-a", 0, [4, 5]), consume(2, "cg-0", ["c"], "broker-a", 0),
                 consume(2, "cg-1", ["d", "e"], "broker-a", 1, [7]), consume(3, "cg-0", [], "broker-a", 0, []),
                 consume(0.5, "cg-1", ["f"], "broker-a", 1, [9], group="other")])
    dl = deliveries(ev, ["cg"])
    assert list(zip(dl["node"], dl["msg_id"], dl["offset"].astype(object), dl["order"], dl["line"], strict=True)) == [
        ("cg-0", "a", 4, 0, 0), ("cg-0", "b", 5, 1, 0), ("cg-0", "c", pd.NA, 2, 1), ("cg-1", "d", pd.NA, 3, 2),
        ("cg-1", "e", pd.NA, 4, 2)]
