"""Seed 002 (inconsistent subscriptions in one group) and a fault-free quickstart run: every
acked message consumed at least once, duplicates only on queues that changed hands.
"""

from __future__ import annotations

import signal
from collections import Counter

from emulator.testing import read_events
from tests.integration.seeds_lib import (
    TOPOLOGIES,
    acked,
    consumed,
    moved_queues,
    pulls,
    rebalances,
    sends,
    topology,
)

WAIT_S = 60
SUBSCRIPTION_NOT_EXIST = 24
QUEUES = {(b, q) for b in ("broker-a", "broker-b") for q in range(4)}


def test_inconsistent_subscriptions_in_one_group(start_cluster) -> None:
    c = start_cluster(topology("seed-subscription-inconsistent"))
    rd = c.run_dir
    own = {"cg-1-0": "TopicA", "cg-1-1": "TopicB"}
    queues = {"TopicA": {("broker-a", q) for q in range(8)}, "TopicB": {("broker-b", q) for q in range(8)}}

    def both_joined() -> dict[str, float]:
        """node -> ts of its first rebalance of its own topic that listed both clients."""
        out = {}
        for node, topic in own.items():
            evs = [e for e in rebalances(rd, node, topic=topic) if len(e["cids"]) == 2]
            if evs:
                out[node] = evs[0]["ts"]
        return out

    def orphan_acks(t0: float) -> dict[str, list[dict]]:
        """Per topic: messages acked after t0 on queues the topic's subscriber leaves to the other."""
        out: dict[str, list[dict]] = {}
        for node, topic in own.items():
            mine = {tuple(q) for q in rebalances(rd, node, topic=topic)[-1]["allocated"]}
            out[topic] = [e for mid, e in acked(rd).items() if e["topic"] == topic and e["ts"] > t0
                          and (e["broker"], e["queue_id"]) not in mine]
        return out

    def ready() -> bool:
        joined = both_joined()
        if len(joined) < 2 or not all(pulls(rd, n, code=SUBSCRIPTION_NOT_EXIST) for n in own):
            return False
        return all(len(v) >= 5 for v in orphan_acks(max(joined.values())).values())

    c.wait_for(ready, WAIT_S, "SUBSCRIPTION_NOT_EXIST pulls and acked messages on orphan queues")
    t0 = max(both_joined().values())
    group_consumed = consumed(rd, "cg-1")
    for node, topic in own.items():
        # the broker's table flipped to the other client's topics: pulls failed with code 24
        assert pulls(rd, node, topic=topic, code=SUBSCRIPTION_NOT_EXIST)
        # rebalance over both client ids: half of the topic's queues, the rest left to a client
        # that does not subscribe the topic (facts 4.3)
        latest = rebalances(rd, node, topic=topic)[-1]
        assert sorted(latest["cids"]) == ["127.0.0.1@cg-1-0", "127.0.0.1@cg-1-1"]
        mine = {tuple(q) for q in latest["allocated"]}
        assert len(mine) == 4 and mine < queues[topic]
        other = ({"cg-1-0", "cg-1-1"} - {node}).pop()
        assert not rebalances(rd, other, topic=topic)  # the other client never looks at it
        orphans = queues[topic] - mine
        # nobody pulls the orphan queues: at most the answer to a pull sent before t0 shows up
        late = Counter((e["node"], e["broker"], e["queue_id"]) for e in pulls(rd, topic=topic)
                       if e["ts"] > t0 and (e["broker"], e["queue_id"]) in orphans)
        assert all(n == 1 for n in late.values()), late
        assert not [e for e in read_events(rd, "consume") if e["ts"] > t0 and e["topic"] == topic
                    and (e["broker"], e["queue_id"]) in orphans]
        # some of the topic is consumed (by its subscriber), the orphan queues' messages never
        assert any(e["topic"] == topic for e in read_events(rd, "consume"))
    for topic, msgs in orphan_acks(t0).items():
        assert msgs and not [e["msg_id"] for e in msgs if e["msg_id"] in group_consumed], topic


def test_fault_free_quickstart_consumes_every_acked_message(start_cluster) -> None:
    c = start_cluster(TOPOLOGIES / "quickstart.yaml")
    rd = c.run_dir
    c.wait_for(lambda: len(acked(rd, "pg-1-0")) >= 150 and all(rebalances(rd, n) for n in ("cg-1-0", "cg-1-1")),
               WAIT_S, "150 acked messages and both consumers rebalanced")
    c.signal("pg-1-0", signal.SIGTERM)  # the application stops sending (graceful shutdown)
    done = acked(rd, "pg-1-0")
    c.wait_for(lambda: set(done) <= set(consumed(rd, "cg-1")), WAIT_S,
               "every acked message consumed by cg-1")
    attempts = sends(rd, "pg-1-0")
    bad = [e for e in attempts if e["outcome"] != "ok"]
    assert bad == [], f"{len(bad)} failed attempts in a fault-free run, e.g. {bad[:3]}"
    assert not read_events(rd, "send.fail")
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
    finals = {n: {tuple(q) for q in rebalances(rd, n, topic="OrderTopic")[-1]["allocated"]}
              for n in ("cg-1-0", "cg-1-1")}
    assert finals["cg-1-0"] | finals["cg-1-1"] == QUEUES and not finals["cg-1-0"] & finals["cg-1-1"]
