"""Master -> slave replication on real processes: after the master is SIGKILLed, a consumer that
fell behind consumes from the slave what was acked before the kill, with long-polled (not
spinning) pulls.

The consumer is paused (SIGSTOP) while the producer keeps sending, so that there is something
left to consume when the master dies; it is resumed after the kill and finds broker-a's queues
only on the slave (docs/rocketmq-model.md §4.6: findBrokerAddressInSubscribe falls back to any address). Before the
kill the test waits until the slave's queues hold every message acked up to a moment ``t1``
(the producer is sync: one send in flight, so per-queue counts cover the acked prefix); only
messages acked after ``t1`` -- the last moments before the kill -- may be missing.
"""

from __future__ import annotations

import signal
from collections import Counter
from typing import Any

from rmqemu.emulator.node.clock import host_ms
from rmqemu.emulator.testing import read_events
from tests.eventdoc import contract_problems
from tests.integration.seeds_lib import acked, consumed, pulls

SCALE = 0.01
WAIT_S = 60
PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY = 19, 20
TOPO = {
    "name": "replication",
    "timing": {"scale": SCALE},
    "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 1, "autoCreateTopicEnable": False}],
    "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 4}],
    "producers": [{"group": "pg-1", "topics": ["T"], "rate": 0.5, "size": 64, "mode": "sync", "body": "mixed"}],
    "consumers": [{"group": "cg-1", "instances": 1, "subscribe": ["T"], "allocate": "AVG"}],
    "duration": "100000s",
}


def slave_pulls(run_dir, after: float) -> list[dict]:
    return [e for e in pulls(run_dir, "cg-1-0") if e.get("broker_id") == 1 and e["ts"] > after]


def test_consumers_read_from_the_slave_what_was_acked_before_the_master_died(start_cluster) -> None:
    c = start_cluster(TOPO)
    rd = c.run_dir
    c.wait_for(lambda: read_events(rd, "broker.ha", node="broker-a-1", where=lambda e: e["change"] == "connected"),
               WAIT_S, "the slave's HA connection")
    c.wait_for(lambda: len(consumed(rd, "cg-1")) >= 5, WAIT_S, "a first few consumed messages")

    c.launcher.signal("cg-1-0", signal.SIGSTOP)
    paused_at = host_ms()
    c.wait_for(lambda: len([e for e in acked(rd, "pg-1-0").values() if e["ts"] > paused_at]) >= 40,
               WAIT_S, "40 messages acked while the consumer is paused")
    t1 = host_ms()
    before_t1 = {m: e for m, e in acked(rd, "pg-1-0").items() if e["ts"] <= t1}
    per_queue = Counter(e["queue_id"] for e in before_t1.values())

    def slave_caught_up() -> bool:
        queues = c.state("broker-a-1")["queues"]
        return all(queues.get(f"T:{q}", 0) >= n for q, n in per_queue.items())

    c.wait_for(slave_caught_up, WAIT_S, "the slave to hold every message acked up to t1")
    c.launcher.signal("broker-a-0", signal.SIGKILL)
    c.launcher.node_exited("broker-a-0", signal.SIGKILL)
    killed_at = read_events(rd, "node.exit", node="broker-a-0")[-1]["ts"]
    consumed_before_kill = set(consumed(rd, "cg-1"))
    c.launcher.signal("cg-1-0", signal.SIGCONT)

    left = set(before_t1) - consumed_before_kill
    assert len(left) >= 30, "the paused consumer should have fallen behind"
    c.wait_for(lambda: set(before_t1) <= set(consumed(rd, "cg-1")), WAIT_S,
               f"the {len(left)} messages acked before t1 and not yet consumed to be consumed from the slave")
    caught_up_at = host_ms()

    found = [e for e in slave_pulls(rd, killed_at) if e["code"] == 0 and e["count"] > 0]
    assert found, "no FOUND pull from the slave"
    late = {m for m, e in acked(rd, "pg-1-0").items() if t1 < e["ts"] <= killed_at}
    missing = late - set(consumed(rd, "cg-1"))
    print(f"replication: {len(left)} consumed from the slave after the kill, {len(found)} FOUND slave pulls; "
          f"{len(missing)} of {len(late)} messages acked in the last {killed_at - t1:.0f} ms before the kill missing")

    # no tight loop: the slave's pulls are long-polled once the consumer has caught up
    c.wait_for(lambda: len([e for e in slave_pulls(rd, caught_up_at) if e["code"] == PULL_NOT_FOUND]) >= 20,
               WAIT_S, "20 long-polled PULL_NOT_FOUND answers from the slave")
    window = slave_pulls(rd, killed_at)
    span_ms = max(e["ts"] for e in window) - min(e["ts"] for e in window)
    rate = len(window) / max(span_ms, 1.0)
    assert not [e for e in window if e["code"] == PULL_RETRY_IMMEDIATELY]
    assert rate < 0.1, f"{len(window)} pulls to the slave in {span_ms:.0f} ms: a tight loop"
    assert not c.died
    assert contract_problems(rd) == [], "lines that break the event registry (rmqemu/event_kinds.py)"


SYNC_TOPO = {**TOPO, "name": "replication-sync", "consumers": [],
             "brokers": [{"name": "broker-a", "slaves": 1, "autoCreateTopicEnable": False,
                          "brokerRole": "SYNC_MASTER"}]}


def test_sync_master_acks_after_the_slave_and_answers_slave_not_available_without_it(start_cluster) -> None:
    c = start_cluster(SYNC_TOPO)
    rd = c.run_dir

    def ok(code: int, after: float = 0.0) -> list[dict[str, Any]]:
        return [e for e in read_events(rd, "send", node="pg-1-0")
                if e["outcome"] == "ok" and e["code"] == code and e["ts"] > after]

    c.wait_for(lambda: len(ok(0)) >= 20, WAIT_S, "20 sends acked after the slave has them")
    state = c.state("broker-a-0")["ha"]
    assert state["slaves"] == ["broker-a-1"] and state["push2slave_max_offset"] > 0
    c.launcher.signal("broker-a-1", signal.SIGKILL)
    c.launcher.node_exited("broker-a-1", signal.SIGKILL)
    killed_at = read_events(rd, "node.exit", node="broker-a-1")[-1]["ts"]
    c.wait_for(lambda: len(ok(11, killed_at)) >= 5, WAIT_S,
               "sends answered SLAVE_NOT_AVAILABLE (stored, not replicated)")
    assert read_events(rd, "broker.ha", node="broker-a-0", where=lambda e: e["change"] == "slave_disconnected")
    assert not c.died
