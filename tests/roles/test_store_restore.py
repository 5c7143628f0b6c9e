"""A user's messages through the store on disk: written, read back by a restarted broker,
transferred to a slave and read back by the restarted slave, whatever their bodies, keys and
properties hold (docs/design.md §6, "JSON-lines files"); and what a restore does with a queue
file a kill or a disk damaged."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.node.io import StoreDir
from rmqemu.emulator.roles.common.base import Emit, Log
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.store.message_store import (
    GetMessageStatus,
    MessageStore,
    queue_file,
)
from rmqemu.emulator.roles.store.replica import append_replicated, transfer_body, transfer_lines
from rmqemu.emulator.roles.store.restore import restore
from tests import strategies
from tests.roles.broker_helpers import broker, send
from tests.roles.fakes import FakeStore

text = strategies.text()
messages = st.lists(st.tuples(st.integers(0, 2), strategies.bodies(), st.dictionaries(text, text, max_size=3)),
                    min_size=1, max_size=12)
SHOWN = ("topic", "queueId", "queueOffset", "properties", "msgId", "commitLogOffset", "storeSize",
         "storeTimestamp", "bornHost")


def stored(store: MessageStore) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Every message as a consumer would see it: its body's bytes and the fields that identify it."""
    return {key: [{**{k: r.get(k) for k in SHOWN}, "body": body_bytes(r)} for r in q]
            for key, q in store.queues.items() if q}


def write(store: MessageStore, disk: StoreDir, msgs: list[tuple[int, str | bytes, dict[str, str]]]) -> None:
    for i, (qid, body, props) in enumerate(msgs):
        _, append = store.put("Topic", qid, body, {**props, "KEYS": f"k\u2028{i}"}, wall_ms=1000 + i,
                              born_host=f"10.0.0.{i}:1")
        disk.append(append.relpath, append.lines)


def reopen(root: Path, queues: list[tuple[str, int]]) -> tuple[MessageStore, list[Any]]:
    disk = StoreDir(root)
    store = MessageStore("127.0.0.1:10911")
    done = restore(store, disk.read, queues)
    disk.close()
    return store, done.problems


QUEUES = [("Topic", q) for q in range(3)]


@settings(max_examples=60, deadline=None)
@given(messages, st.integers(64, 4096))
def test_every_message_comes_back_after_a_restart_and_on_the_restarted_slave(msgs, batch_bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        master, slave_dir = StoreDir(Path(tmp, "m")), StoreDir(Path(tmp, "s"))
        store = MessageStore("127.0.0.1:10911")
        write(store, master, msgs)
        master.close()
        again, problems = reopen(Path(tmp, "m"), QUEUES)
        assert problems == [] and stored(again) == stored(store)
        assert again.max_phy_offset() == store.max_phy_offset()

        slave = MessageStore("127.0.0.1:10911", is_slave=True)
        while slave.max_phy_offset() < store.max_phy_offset():  # HAConnection's transfers, as bytes
            lines, _ = store.transfer_from(slave.max_phy_offset(), batch_bytes)
            batch = append_replicated(slave, transfer_lines(transfer_body(lines)))
            assert batch.rejected == 0 and batch.gaps == []
            for a in batch.appends:
                slave_dir.append(a.relpath, a.lines)
        slave_dir.close()
        assert stored(slave) == stored(store)
        restarted, problems = reopen(Path(tmp, "s"), QUEUES)
        assert problems == [] and stored(restarted) == stored(store)


def test_a_torn_last_line_is_cut_before_the_next_append_and_nothing_acked_is_lost(tmp_path: Path) -> None:
    disk, store = StoreDir(tmp_path), MessageStore("127.0.0.1:10911")
    write(store, disk, [(0, "first\u2028", {}), (0, "second\x85", {})])
    disk.close()
    path = tmp_path / queue_file("Topic", 0)
    path.write_bytes(path.read_bytes() + '{"topic":"Topic","body":"h\u00e9'.encode()[:-1])  # half a character
    again, problems = reopen(tmp_path, QUEUES)
    assert problems == [] and again.max_offset("Topic", 0) == 2
    disk = StoreDir(tmp_path)
    _, append = again.put("Topic", 0, "third\u2029", {}, wall_ms=5000)
    disk.append(append.relpath, append.lines)
    disk.close()
    final, problems = reopen(tmp_path, QUEUES)
    assert problems == []
    assert [body_bytes(r).decode() for r in final.queues[("Topic", 0)]] == ["first\u2028", "second\x85", "third\u2029"]


def test_a_bad_line_in_the_middle_is_reported_and_later_messages_keep_their_offsets(tmp_path: Path) -> None:
    disk, store = StoreDir(tmp_path), MessageStore("127.0.0.1:10911")
    write(store, disk, [(0, f"m{i}", {}) for i in range(5)])
    disk.close()
    path = tmp_path / queue_file("Topic", 0)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:20]  # message 1 damaged
    lines[3] = b'{"topic":"Other","queueId":0,"queueOffset":3,"commitLogOffset":1}'  # not of this queue
    path.write_bytes(b"\n".join(lines))
    again, problems = reopen(tmp_path, QUEUES)
    assert [(p.problem, p.line, p.offset, p.count) for p in problems] == [
        ("bad_line", 2, -1, 0), ("gap", 3, 1, 1), ("bad_line", 4, -1, 0), ("gap", 5, 3, 1)]
    assert again.max_offset("Topic", 0) == 5
    got = again.get("Topic", 0, 0, 32)
    assert got.status == GetMessageStatus.FOUND and got.next_begin_offset == 5
    assert [(m["queueOffset"], body_bytes(m)) for m in got.messages] == [(0, b"m0"), (2, b"m2"), (4, b"m4")]
    past = again.get("Topic", 0, 1, 1)  # a pull at a lost offset moves past it, as RocketMQ's getMessage
    assert [m["queueOffset"] for m in past.messages] == [2] and past.next_begin_offset == 3
    lost = again.get("Topic", 0, 1, 1, matches=lambda m: False)
    assert lost.status == GetMessageStatus.MESSAGE_WAS_REMOVING and lost.next_begin_offset == 5
    acts = problems[1].actions("broker-a-0")
    assert isinstance(acts[0], Emit) and acts[0].kind == "broker.store" and acts[0].fields["offset"] == 1
    assert isinstance(acts[1], Log) and "line 3" in acts[1].text and "queue offset 1" in acts[1].text


def test_a_slave_keeps_a_gap_in_its_masters_transfer_at_its_offsets() -> None:
    master = MessageStore("127.0.0.1:10911")
    for i in range(4):
        master.put("Topic", 0, f"m{i}", {}, wall_ms=i)
    lines, _ = master.transfer_from(0, 1 << 20)
    slave = MessageStore("127.0.0.1:10911", is_slave=True)
    batch = append_replicated(slave, [lines[0], lines[2], lines[3]])
    assert (batch.accepted, batch.rejected, batch.gaps) == (3, 0, [("Topic", 0, 1, 1)])
    assert [m["queueOffset"] for m in slave.get("Topic", 0, 0, 32).messages] == [0, 2, 3]


def test_a_restarted_broker_says_what_its_damaged_queue_file_cost() -> None:
    """Through the broker's start over the runtime: the event, the log line, the offsets kept."""
    store = FakeStore()
    first = broker(store=store, config={"autoCreateTopicEnable": True})
    for i in range(3):
        send(first, "A", body=f"m{i}\u2028", queue_id=0, props={"UNIQ_KEY": f"U{i}"})
    path = queue_file("A", 0)
    lines = store.files[path].split("\n")
    store.files[path] = "\n".join([lines[0], lines[1][:30], *lines[2:]])
    again = broker(store=store, time=first.time, config={"autoCreateTopicEnable": True})
    found = again.events("broker.store")
    assert [(e["problem"], e.get("offset")) for e in found] == [("bad_line", None), ("gap", 1)]
    assert found[1]["queue_file"] == path
    logged = [a.text for a in again.actions if isinstance(a, Log)]
    assert len(logged) == 2 and logged[1].startswith(f"broker-a-0: store: {path} line 3: no message at queue offset 1")
    assert [m["queueOffset"] for m in again.role.store.get("A", 0, 0, 32).messages] == [0, 2]
