"""A topic entry's ``message_type`` (docs/rocketmq-model.md §10.5): carried to the admin create as 5.x's
``+message.type=`` attribute, and a bad value named with its file, field, line and allowed values."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqemu.emulator.launcher import admin
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology
from rmqemu.emulator.protocol import RequestCode
from rmqemu.errors import TopologyError
from tests.emulator.test_topology import BASE, problems

TOPICS = [{"name": "T", "brokers": ["broker-a"]}]


def test_a_bad_message_type_names_the_file_the_field_and_the_allowed_values(tmp_path: Path) -> None:
    path = tmp_path / "bad-type.yaml"
    path.write_text("name: x\nbrokers:\n  - {name: broker-a}\n"
                    "topics:\n  - {name: T, brokers: [broker-a], message_type: fifo}\n")
    with pytest.raises(TopologyError) as info:
        load_topology(path)
    text = str(info.value)
    assert str(path) in text
    assert info.value.problems == [
        "topics[0].message_type: Input should be 'NORMAL', 'FIFO', 'DELAY', 'TRANSACTION' or 'MIXED' (line 5)"]
    assert problems({**BASE, "topics": [{**TOPICS[0], "message_type": 3}]}) == [
        "topics[0].message_type: Input should be 'NORMAL', 'FIFO', 'DELAY', 'TRANSACTION' or 'MIXED'"]


def test_the_type_reaches_the_admin_create_as_an_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    topo = parse_topology({**BASE, "topics": [{**TOPICS[0], "message_type": "FIFO"}, TOPICS[0] | {"name": "U"}]},
                          "t.yaml")
    sent: list[dict] = []

    def fake_call(addr, frame, timeout_ms):
        assert frame.code == RequestCode.UPDATE_AND_CREATE_TOPIC
        sent.append(dict(frame.fields))
        return frame.response(0)

    monkeypatch.setattr(admin, "_call", fake_call)
    for topic in topo.topics:
        admin.update_topic("127.0.0.1:1", topic)
    assert sent[0]["attributes"] == "+message.type=FIFO" and "attributes" not in sent[1]
    assert topo.topics[1].message_type is None
