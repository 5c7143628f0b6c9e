"""Loss per (consumer group, topic) (docs/design.md §7 "Consumption"): in clustering mode every
group subscribing a topic must get every message of it, so a message one group got and another
missed is lost for the second group, though ``consumption.lost`` (no group got it) is 0.

The log, worked out by hand:
  acked on T before run.stop (9000): m1 m2 m3; m4 first acked at 9100, after it (not expected).
  acked on U: u1.
  cg-1 subscribes T (rebalance) and consumes m1 m2 m3 m4        -> T: expected 3, consumed 3, lost 0
  cg-2 subscribes T (rebalance), consumes m1 from T and m2 redelivered from %RETRY%cg-2
                                                              -> T: expected 3, consumed 2, lost 1 (m3)
  cg-3 subscribes U only (rebalance U), consumes u1            -> U: expected 1, consumed 1, lost 0;
                                                                  no row (cg-3, T): not charged
  %RETRY%cg-1 and %RETRY%cg-2 are subscribed (rebalanced) but no producer sends to them: no row.
  consumption.lost = 0 (every acked message was consumed by some group); lost_per_group = 1.
"""
from __future__ import annotations

import pytest

from tests.reports.runlog import by, ev, exit_, metrics_of, send, start, topic, write_run

T, U = "T", "U"
CONSUMERS = {"cg-1-0": "cg-1", "cg-2-0": "cg-2", "cg-3-0": "cg-3"}


def consume(ts, node, msg_ids, name):
    return ev(ts, node, "consume", group=CONSUMERS[node], topic=name, broker="broker-a", queue_id=0, msg_ids=msg_ids)


def rebalance(ts, node, name):
    return ev(ts, node, "rebalance", group=CONSUMERS[node], topic=name, cid=f"{node}@1", cids=[f"{node}@1"],
              strategy="AVG", allocated=[["broker-a", 0]])


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    nodes = ("broker-a-0", "pg-1-0", *CONSUMERS)
    events = [
        start(1000, "broker-a-0", "broker"), start(1000, "pg-1-0", "producer"),
        *[start(1000, n, "consumer", group=g) for n, g in CONSUMERS.items()],
        topic(1000, "broker-a-0", T), topic(1000, "broker-a-0", U),
        rebalance(1100, "cg-1-0", T), rebalance(1100, "cg-1-0", "%RETRY%cg-1"),
        rebalance(1100, "cg-2-0", T), rebalance(1100, "cg-2-0", "%RETRY%cg-2"), rebalance(1100, "cg-3-0", U),
        send(1200, "pg-1-0", T, "broker-a", msg_id="m1"), send(1300, "pg-1-0", T, "broker-a", msg_id="m2"),
        send(1400, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="m3"),
        send(1500, "pg-1-0", T, "broker-a", msg_id="m3"), send(1600, "pg-1-0", U, "broker-a", msg_id="u1"),
        consume(2000, "cg-1-0", ["m1", "m2", "m3"], T), consume(2000, "cg-2-0", ["m1"], T),
        consume(2100, "cg-3-0", ["u1"], U), consume(2500, "cg-2-0", ["m2"], "%RETRY%cg-2"),
        send(9100, "pg-1-0", T, "broker-a", msg_id="m4"), consume(9150, "cg-1-0", ["m4"], T),
        *[exit_(9500, n, code=0) for n in nodes],
    ]
    faults = [{"ts": 9000, "node": "launcher", "kind": "run.stop"}]
    return metrics_of(write_run(tmp_path_factory.mktemp("loss"), events, faults))


def test_a_message_one_subscribing_group_missed_is_lost_for_it_only(metrics):
    c = metrics["consumption"]
    assert c["lost"] == 0  # m3 was consumed by cg-1
    assert c["lost_per_group"] == 1
    row = by(c["groups"], group="cg-2", topic=T)
    assert (row["expected"], row["consumed"], row["lost"]) == (3, 2, 1)  # m2 counts via %RETRY%cg-2
    row = by(c["groups"], group="cg-1", topic=T)
    assert (row["expected"], row["consumed"], row["lost"]) == (3, 3, 0)  # m4 acked after run.stop


def test_a_group_not_subscribing_the_topic_is_not_charged(metrics):
    rows_ = metrics["consumption"]["groups"]
    assert {(r["group"], r["topic"]) for r in rows_} == {("cg-1", T), ("cg-2", T), ("cg-3", U)}
    row = by(rows_, group="cg-3", topic=U)
    assert (row["expected"], row["consumed"], row["lost"]) == (1, 1, 0)

