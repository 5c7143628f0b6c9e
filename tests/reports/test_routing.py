"""Sends to a slave, to a broker without the topic (with and without auto-create), to a
bad queue id; "No route info" errors; auto-create coverage (the TBW102 imbalance)."""
from __future__ import annotations

import pytest

from tests.reports.runlog import broker_node, by, croute, exit_, metrics_of, send, start, topic, write_run

T, NEW = "T", "NewTopic"
NO_ROUTE = "No route info of this topic: Ghost\nSee http://rocketmq.apache.org/docs/faq/ for further details."


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    brokers = ["broker-a-0", "broker-a-1", "broker-b-0", "broker-c-0", "broker-d-0"]
    events = [
        *[start(1000, b, "broker") for b in brokers],
        start(1000, "pg-1-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-a-1", T), topic(1000, "broker-b-0", "Other"),
        topic(1000, "broker-a-0", "TBW102", perm=7, queues=8, how="startup"),
        topic(1000, "broker-d-0", "TBW102", perm=7, queues=8, how="startup"),
        topic(1000, "broker-c-0", "TBW102", perm=6, queues=8, how="startup"),  # no inherit bit
        croute(1100, "pg-1-0", T, ["broker-a"]),
        send(1200, "pg-1-0", T, "broker-a", broker_id=1, msg_id="slave"),           # not_master
        send(1210, "pg-1-0", T, "broker-b", outcome="error", msg_id="nt1"),         # no_topic
        send(1220, "pg-1-0", NEW, "broker-c", outcome="error", msg_id="nt2"),       # no_topic: no inherit
        send(1230, "pg-1-0", NEW, "broker-a", queue_id=7, msg_id="auto1"),          # auto-create: fine
        send(1240, "pg-1-0", NEW, "broker-a", queue_id=8, outcome="error", msg_id="bq1"),  # >= TBW102's 8
        topic(1250, "broker-a-0", NEW, queues=4, how="auto"),
        send(1300, "pg-1-0", NEW, "broker-a", queue_id=4, outcome="error", msg_id="bq2"),  # >= 4 now
        send(1310, "pg-1-0", T, "broker-a", queue_id=3, msg_id="ok1"),
        send(1320, "pg-1-0", T, "broker-a", queue_id=4, outcome="error", msg_id="bq3"),
        send(1330, "pg-1-0", "Ghost", None, queue_id=None, outcome="no_route", msg_id="g1",
             error=NO_ROUTE, latency_ms=None),
        send(1340, "pg-1-0", "Ghost", None, queue_id=None, outcome="no_route", msg_id="g1",
             error=NO_ROUTE, latency_ms=None),
        send(1350, "pg-1-0", T, "broker-e", msg_id="dead1"),  # a broker that never started
        *[exit_(2000, n, code=0) for n in [*brokers, "pg-1-0"]],
    ]
    nodes = {b: broker_node(b, auto=b in ("broker-a-0", "broker-d-0")) for b in brokers}
    nodes["pg-1-0"] = {"role": "producer", "group": "pg-1"}
    return metrics_of(write_run(tmp_path_factory.mktemp("routing"), events, nodes=nodes))


def test_reasons(metrics):
    assert metrics["misrouted"]["by_reason"] == {
        "dead": 1, "paused": 0, "partitioned": 0, "stale_master": 0, "not_master": 1, "no_topic": 2, "bad_queue": 3}
    assert metrics["misrouted"]["total"] == 7


def test_no_route_sends_counted_apart(metrics):
    s = metrics["sends"]
    assert (s["attempts"], s["no_route"], s["failed"], s["ok"]) == (11, 2, 5, 4)
    assert s["no_route_errors"] == {"total": 2, "by_topic": [{"topic": "Ghost", "errors": 2}]}
    assert s["latency"]["all"]["n"] == 9


def test_autocreate_coverage(metrics):
    row = by(metrics["autocreate"], topic=NEW)
    assert row["created_on"] == ["broker-a"] and row["hosted_on"] == ["broker-a"]
    assert row["auto_masters"] == ["broker-a", "broker-d"]
    assert (row["hosts"], row["of_auto_masters"]) == (1, 1)
