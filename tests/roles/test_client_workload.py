"""Workload parsing, even pacing, message generation; role construction through the registry."""

import random

import pytest

from rmqemu.emulator.roles.client.workload import ConsumerWorkload, MessageFactory, Pacer, ProducerWorkload
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.registry import build_role


def test_rate_is_per_cluster_second():
    w = ProducerWorkload.from_dict({"topics": ["T"], "rate": 0.5})
    assert w.period_ms() == 2000.0  # one message every 2 cluster seconds
    assert ProducerWorkload.from_dict({"topics": ["T"], "rate": 0}).period_ms() is None


def test_pacer_even_spacing_and_limit():
    p = Pacer(start_ms=100, period_ms=10, limit=5)
    assert p.due(99) == 0 and p.due(100) == 1 and p.due(125) == 3
    p.issued = 3
    assert p.due(1000) == 2


def test_messages_unique_sized_and_round_robin():
    f = MessageFactory("pg-0", ProducerWorkload.from_dict({"topics": ["A", "B"], "size": 40, "keys": True}),
                       random.Random(1))
    f.set_incarnation(1234)
    ms = [f.next_message() for _ in range(4)]
    assert [m.topic for m in ms] == ["A", "B", "A", "B"]
    assert len({m.msg_id for m in ms}) == 4 and all(len(m.body) == 40 and "KEYS" in m.properties for m in ms)


@pytest.mark.parametrize("bad,msg", [({"topics": []}, "topics"), ({"topics": ["T"], "mode": "x"}, "mode"),
                                     ({"topics": ["T"], "batch": 0}, "batch"), ({"topics": ["T"], "oops": 1}, "oops")])
def test_bad_producer_workload_named(bad, msg):
    with pytest.raises(ValueError, match=msg):
        ProducerWorkload.from_dict(bad)


def test_consumer_workload_accepts_plain_topic_names():
    w = ConsumerWorkload.from_dict({"subscribe": ["T"], "allocate": "AVG"})
    assert w.subscribe == [{"topic": "T", "expression": "*"}]


def test_registry_builds_client_roles():
    base = {"seed": 1, "namesrv_addrs": ["127.0.0.1:1"], "namesrv_names": ["namesrv-0"], "config": {}}
    p = build_role(NodeSpec.from_dict({**base, "name": "pg-0", "role": "producer", "group": "pg",
                                       "workload": {"topics": ["T"], "rate": 10}}), "127.0.0.1:2", lambda _: None)
    c = build_role(NodeSpec.from_dict({**base, "name": "cg-0", "role": "consumer", "group": "cg",
                                       "workload": {"subscribe": [{"topic": "T", "expression": "*"}],
                                                    "allocate": "CONSISTENT_HASH"}}),
                   "127.0.0.1:3", lambda _: None)
    assert p.role == "producer" and c.role == "consumer" and c.state()["group"] == "cg"


def test_delay_levels_go_on_the_messages_in_turn():
    f = MessageFactory("pg-0", ProducerWorkload.from_dict({"topics": ["A"], "delay_level": [0, 3, 18]}),
                       random.Random(1))
    assert [m.properties.get("DELAY") for m in (f.next_message() for _ in range(4))] == [None, "3", "18", None]
    one = MessageFactory("pg-0", ProducerWorkload.from_dict({"topics": ["A"], "delay_level": 2}), random.Random(1))
    assert one.next_message().properties["DELAY"] == "2"
    for bad in ({"delay_level": -1}, {"delay_level": []}, {"delay_level": 2, "batch": 3}):
        with pytest.raises(ValueError, match="workload.delay_level: "):
            ProducerWorkload.from_dict({"topics": ["A"], **bad})
