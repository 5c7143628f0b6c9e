"""The topology's order keys: ``ordered:`` on producers, ``orderly:`` on consumers."""

from __future__ import annotations

from rmqemu.emulator.launcher.topology_load import parse_topology, plan_nodes
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.registry import build_role
from tests.emulator.test_topology import BASE, problems


def test_ordered_and_orderly_reach_the_nodes_workloads() -> None:
    topo = parse_topology({**BASE, "producers": [
        {"group": "pg", "topics": ["T"], "ordered": True},
        {"group": "pq", "topics": ["T"], "ordered": {"keys": 3, "pick": "cycle"}},
        {"group": "pp", "topics": ["T"], "ordered": False}],
                           "consumers": [{"group": "cg", "subscribe": ["T"], "orderly": True},
                                         {"group": "cc", "subscribe": ["T"]}]})
    nodes = {n.name: n for n in plan_nodes(topo)}
    assert nodes["pg-0"].workload["ordered"] == {"keys": 16, "pick": "random"}
    assert nodes["pq-0"].workload["ordered"] == {"keys": 3, "pick": "cycle"}
    assert "ordered" not in nodes["pp-0"].workload
    assert nodes["cg-0"].workload["orderly"] is True and "orderly" not in nodes["cc-0"].workload
    base = {"seed": 1, "namesrv_addrs": ["127.0.0.1:1"], "namesrv_names": ["namesrv-0"], "config": {}}
    producer = build_role(NodeSpec.from_dict({**base, "name": "pq-0", "role": "producer", "group": "pq",
                                              "workload": nodes["pq-0"].workload}), "127.0.0.1:2", lambda _: None)
    assert producer.keys is not None and producer.keys.keys == ["pq-0:0", "pq-0:1", "pq-0:2"]


def test_order_keys_are_checked_with_their_paths() -> None:
    assert problems({**BASE, "producers": [
        {"group": "a", "topics": ["T"], "ordered": {"keys": 0, "pik": "cycle"}},
        {"group": "b", "topics": ["T"], "mode": "async", "ordered": True},
        {"group": "c", "topics": ["T"], "ordered": 7},
    ], "consumers": [
        {"group": "d", "subscribe": ["T"], "orderly": True, "messageModel": "BROADCASTING"},
        {"group": "e", "subscribe": ["T"], "orderly": "maybe"},
    ]}) == [
        "producers[0].ordered.keys: must be >= 1, got 0",
        "producers[0].ordered.pik: unknown key (did you mean pick?)",
        "producers[1].ordered: needs mode: sync and batch: 1 (an ordered send is one sync message through "
        "SelectMessageQueueByHash), got mode: async, batch: 1",
        "producers[2].ordered: expected true, false or a mapping {keys: N, pick: random|cycle}, got '7'",
        "consumers[0].orderly: needs messageModel: CLUSTERING (the orderly consumer is modelled with its broker "
        "queue locks, which a BROADCASTING consumer does not take)",
        "consumers[1].orderly: Input should be a valid boolean, unable to interpret input",
    ]
