"""AllocateMessageQueueConsistentHash with a client id listed twice (4.9.4 ConsistentHashRouter.addNode
numbers a node's virtual nodes from getExistingReplicas, so a repeated id gets twice the weight).
The expected owners were computed by the 4.9.4 Java classes (ConsistentHashRouter, VirtualNode)."""

from __future__ import annotations

import pytest

from rmqemu.emulator.roles.client.allocate import consistent_hash_ring, make_consistent_hash, md5_hash
from rmqemu.emulator.roles.client.route_cache import MessageQueue

CIDS = ["CID-0", "CID-0", "CID-1"]
# Java: for each queue in order, router.routeNode(mq.toString()).getKey()
JAVA_OWNERS_TOPICA_B1 = "0000101000000001"  # "0" = CID-0, "1" = CID-1


def test_repeated_cid_continues_virtual_node_numbering():
    ring = consistent_hash_ring(CIDS, 10)
    assert {md5_hash(f"CID-0-{i}") for i in range(20)} <= set(ring)
    assert list(ring.values()).count("CID-0") == 20 and list(ring.values()).count("CID-1") == 10


@pytest.mark.parametrize("mqs", [
    [MessageQueue("TopicA", "b1", q) for q in range(16)],
    [MessageQueue("T", b, q) for b in ("broker-a", "broker-b") for q in range(8)],
], ids=["TopicA-b1x16", "T-2x8"])
def test_repeated_cid_gets_java_share_of_16_queues(mqs):
    strategy = make_consistent_hash(10)
    assert len(strategy("g", "CID-0", mqs, CIDS)) == 13  # 8 when the repeat overwrote "CID-0-0..9"
    assert len(strategy("g", "CID-1", mqs, CIDS)) == 3


def test_repeated_cid_owners_match_java():
    mqs = [MessageQueue("TopicA", "b1", q) for q in range(16)]
    strategy = make_consistent_hash(10)
    mine = {c: set(strategy("g", c, mqs, CIDS)) for c in ("CID-0", "CID-1")}
    got = "".join("0" if mq in mine["CID-0"] else "1" if mq in mine["CID-1"] else "?" for mq in mqs)
    assert got == JAVA_OWNERS_TOPICA_B1
