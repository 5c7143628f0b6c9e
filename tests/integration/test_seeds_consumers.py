"""Seed 002 (inconsistent subscriptions in one group) and a fault-free quickstart run: every
acked message consumed at least once, duplicates only on queues that changed hands.
"""

from __future__ import annotations

import signal
from collections import Counter

from rmqemu.emulator.testing import read_events
from tests.eventdoc import contract_problems
from tests.integration.seeds_lib import (
    TOPOLOGIES,
    acked,
    consumed,
    moved_queues,
    pulls,
    queue_keys,
    rebalances,
    sends,
    stalled_by_host,
    topology,
)

WAIT_S = 60
SUBSCRIPTION_NOT_EXIST = 24
QUEUES = {(b, q) for b in ("broker-a", "broker-b") for q in range(4)}


def test_inconsistent_subscriptions_in_one_group(start_cluster) -> None:
    c = start_cluster(topology("seed-subscription-inconsistent"))
    own = {"cg-1-0": "TopicA", "cg-1-1": "TopicB"}
    queues = {"TopicA": {("broker-a", q) for q in range(8)}, "TopicB": {("broker-b", q) for q in range(8)}}

    def analyse() -> dict | None:
        """One snapshot of the run. t0: from then on every rebalance of each client listed both
        clients (a broker that has not yet seen one of them lists one, and the lone client then
        takes every queue). Orphans: queues of a topic that no rebalance after t0 gave to its
        subscriber."""
        evs = read_events(c.run_dir)
        reb = {n: [e for e in evs if e["kind"] == "rebalance" and e["node"] == n and e["topic"] == t]
               for n, t in own.items()}
        starts = []
        for n in own:
            single = [e["ts"] for e in reb[n] if len(e["cids"]) < 2]
            after = [e["ts"] for e in reb[n] if len(e["cids"]) == 2 and e["ts"] > max(single, default=0)]
            if not after:
                return None
            starts.append(after[0])
        t0 = max(starts)
        snap: dict = {"t0": t0, "events": evs, "orphans": {}, "orphan_acks": {}}
        for n, topic in own.items():
            held = {q for e in reb[n] if e["ts"] >= t0 for q in queue_keys(e["allocated"])}
            snap["orphans"][topic] = queues[topic] - held
            snap["orphan_acks"][topic] = [  # sent after t0 (an ack logged after t0 may answer a send
                # stored, pulled and consumed before t0, when the producer was slow to read it)
                e for e in evs if e["kind"] == "send" and e["outcome"] == "ok" and e["topic"] == topic
                and e["ts"] - e["latency_ms"] > t0 and (e["broker"], e["queue_id"]) in snap["orphans"][topic]]
        return snap

    def ready() -> bool:
        snap = analyse()
        return snap is not None and all(len(v) >= 5 for v in snap["orphan_acks"].values()) and all(
            pulls(c.run_dir, n, code=SUBSCRIPTION_NOT_EXIST) for n in own) and all(
            any(e["kind"] == "consume" and e["topic"] == t for e in snap["events"]) for t in own.values())

    # a subscriber consumes its own half only in the moments the broker's table holds its topic
    # (it flips with every heartbeat), so its first consume may come after the first orphan acks
    c.wait_for(ready, WAIT_S, "SUBSCRIPTION_NOT_EXIST pulls, acked messages on orphan queues, a consume per topic")
    snap = analyse()
    assert snap is not None
    evs, t0 = snap["events"], snap["t0"]
    group_consumed = Counter(m for e in evs if e["kind"] == "consume" for m in e["msg_ids"])
    for node, topic in own.items():
        # the broker's table flipped to the other client's topics: pulls failed with code 24
        assert [e for e in evs if e["kind"] == "pull" and e["node"] == node and e["topic"] == topic
                and e["code"] == SUBSCRIPTION_NOT_EXIST]
        # rebalance over both client ids: half of the topic's queues, the rest left to a client
        # that does not subscribe the topic (docs/rocketmq-model.md §4.3)
        latest = [e for e in evs if e["kind"] == "rebalance" and e["node"] == node and e["topic"] == topic][-1]
        assert sorted(latest["cids"]) == ["127.0.0.1@cg-1-0", "127.0.0.1@cg-1-1"]
        assert len(latest["allocated"]) == 4 and queue_keys(latest["allocated"]) < queues[topic]
        other = ({"cg-1-0", "cg-1-1"} - {node}).pop()
        assert not [e for e in evs if e["kind"] == "rebalance" and e["node"] == other and e["topic"] == topic]
        orphans = snap["orphans"][topic]
        assert len(orphans) == 4
        # nobody pulls the orphan queues: at most the answer to a pull sent before t0 shows up
        late = Counter((e["node"], e["broker"], e["queue_id"]) for e in evs if e["kind"] == "pull"
                       and e["topic"] == topic and e["ts"] > t0 and (e["broker"], e["queue_id"]) in orphans)
        assert all(n == 1 for n in late.values()), late
        assert not [e for e in evs if e["kind"] == "consume" and e["ts"] > t0 and e["topic"] == topic
                    and (e["broker"], e["queue_id"]) in orphans]
        # the subscriber does consume its own half; the orphans' acked messages are never consumed
        assert any(e["kind"] == "consume" and e["topic"] == topic for e in evs)
        msgs = snap["orphan_acks"][topic]
        assert msgs and not [e["msg_id"] for e in msgs if e["msg_id"] in group_consumed], topic


def test_fault_free_quickstart_consumes_every_acked_message(start_cluster) -> None:
    c = start_cluster(TOPOLOGIES / "quickstart.yaml")
    rd = c.run_dir
    c.wait_for(lambda: len(acked(rd, "pg-1-0")) >= 150 and all(rebalances(rd, n) for n in ("cg-1-0", "cg-1-1")),
               WAIT_S, "150 acked messages and both consumers rebalanced")
    c.launcher.signal("pg-1-0", signal.SIGTERM)  # the application stops sending (graceful shutdown)
    done = acked(rd, "pg-1-0")
    c.wait_for(lambda: set(done) <= set(consumed(rd, "cg-1")), WAIT_S,
               "every acked message consumed by cg-1")
    attempts = sends(rd, "pg-1-0")
    bad = [e for e in attempts if e["outcome"] != "ok"]
    stalled = stalled_by_host(rd, bad)  # the host's, not the cluster's
    bad = [e for e in bad if e["msg_id"] not in stalled]
    assert bad == [], f"{len(bad)} failed attempts in a fault-free run, e.g. {bad[:3]}"
    assert not [e for e in read_events(rd, "send.fail") if e["msg_id"] not in stalled]
    attempts = [e for e in attempts if e["msg_id"] not in stalled]
    assert len({e["msg_id"] for e in attempts}) == len(attempts)  # one attempt per message
    counts = consumed(rd, "cg-1")
    dups = {m: n for m, n in counts.items() if n > 1}
    moved = moved_queues(rd, "cg-1")
    for mid in dups:  # a duplicate needs a queue that changed hands (a rebalance)
        e = done[mid]
        assert (e["topic"], e["broker"], e["queue_id"]) in moved, (mid, e)
    print(f"quickstart: {len(done)} acked, {len(counts)} consumed, {len(dups)} consumed twice or more, "
          f"{len(moved)} queues changed hands")
    # both consumers got work and the split is the AVG one over 2 brokers x 4 queues
    finals = {n: queue_keys(rebalances(rd, n, topic="OrderTopic")[-1]["allocated"])
              for n in ("cg-1-0", "cg-1-1")}
    assert finals["cg-1-0"] | finals["cg-1-1"] == QUEUES and not finals["cg-1-0"] & finals["cg-1-1"]
    assert contract_problems(rd) == [], "lines that break the event registry (rmqemu/event_kinds.py)"
