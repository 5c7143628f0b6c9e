"""Acked-but-never-consumed, duplicates, SUBSCRIPTION_NOT_EXIST pulls and queues allocated
to consumers that do not subscribe the topic (docs/design.md §7, "Also")."""
from __future__ import annotations

import pytest

from tests.reports.runlog import by, croute, ev, exit_, metrics_of, send, start, topic, write_run

T, U = "T", "U"


def consume(ts, node, group, msg_ids, name=T):
    return ev(ts, node, "consume", group=group, topic=name, broker="broker-a", queue_id=0, msg_ids=msg_ids)


def rebalance(ts, node, cids, allocated, name=T):
    return ev(ts, node, "rebalance", group="cg-1", topic=name, cid=f"{node}@1", cids=cids,
              strategy="AVG", allocated=allocated)


def consumption_events() -> list[dict]:
    """The log of this module's tests: one topic consumed by two groups (a message lost, one
    never acked, one consumed twice), one nobody consumes, SUBSCRIPTION_NOT_EXIST pulls."""
    return [
        start(1000, "broker-a-0", "broker"), start(1000, "pg-1-0", "producer"),
        start(1000, "cg-1-0", "consumer"), start(1000, "cg-1-1", "consumer"), start(1000, "cg-2-0", "consumer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-a-0", U),
        croute(1100, "pg-1-0", T, ["broker-a"], queues=4), croute(1100, "cg-1-0", T, ["broker-a"], queues=4),
        *[send(1200 + i, "pg-1-0", T, "broker-a", msg_id=f"m{i}") for i in (1, 2, 3, 4)],
        send(1210, "pg-1-0", T, "broker-a", outcome="error", msg_id="m5"),
        send(1220, "pg-1-0", U, "broker-a", msg_id="u1"),                  # U is consumed by nobody
        rebalance(1300, "cg-1-0", ["cg-1-0@1"], [["broker-a", q] for q in range(4)]),
        rebalance(1400, "cg-1-0", ["cg-1-0@1", "cg-1-1@1"], [["broker-a", 0], ["broker-a", 1]]),
        consume(1500, "cg-1-0", "cg-1", ["m1", "m2"]), consume(1600, "cg-1-0", "cg-1", ["m2"]),
        consume(1700, "cg-2-0", "cg-2", ["m3", "m6"]), consume(1750, "cg-2-0", "cg-2", ["m1"]),
        ev(1800, "cg-1-1", "pull", group="cg-1", topic=T, broker="broker-a", queue_id=2, code=24),
        ev(1900, "cg-1-1", "pull", group="cg-1", topic=T, broker="broker-a", queue_id=3, code=24),
        ev(1950, "cg-1-1", "pull", group="cg-1", topic=T, broker="broker-a", queue_id=3, code=0),
        *[exit_(2000, n, code=0) for n in ("broker-a-0", "pg-1-0", "cg-1-0", "cg-1-1", "cg-2-0")],
    ]


def consumption_log(root):
    """Write the log of this module's tests as a run dir at ``root``."""
    return write_run(root, consumption_events())


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    return metrics_of(consumption_log(tmp_path_factory.mktemp("consume")))


def test_lost_duplicates_unacked(metrics):
    c = metrics["consumption"]
    assert (c["lost"], c["duplicate_messages"], c["duplicate_deliveries"], c["consumed_unacked"]) == (1, 1, 1, 1)
    t = by(c["by_topic"], topic=T)
    assert (t["acked"], t["consumed"], t["lost"]) == (4, 4, 1)  # m4 lost; m5 never acked; m6 never sent
    u = by(c["by_topic"], topic=U)
    assert (u["acked"], u["consumed"], u["lost"]) == (1, 0, 0)  # nobody consumes U: not counted lost


def test_subscription_not_exist_pulls(metrics):
    sne = metrics["subscriptions"]["subscription_not_exist"]
    assert sne == {"total": 2, "by_consumer": [{"node": "cg-1-1", "group": "cg-1", "topic": T, "pulls": 2}]}


def test_queues_left_to_non_subscriber(metrics):
    nsq = metrics["subscriptions"]["non_subscriber_queues"]
    assert nsq["total"] == 2
    row = by(nsq["by_group"], group="cg-1", topic=T)
    assert row["subscribers"] == ["cg-1-0@1"] and row["non_subscribers"] == ["cg-1-1@1"]
    assert (row["queues"], row["unowned_queues"]) == (4, 2)


def test_acked_counts(metrics):
    assert (metrics["sends"]["messages"], metrics["sends"]["acked"]) == (6, 5)

