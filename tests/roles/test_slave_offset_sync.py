"""A slave's consumer-offset sync (docs/rocketmq-model.md §2.1): SlaveSynchronize asks its master for
GET_ALL_CONSUMER_OFFSET (43) after the topic config, on the 10 s (initial 3 s) sync timer, and
``putAll``s the answer -- per ``topic@group`` entry -- so it answers QUERY_CONSUMER_OFFSET with the
master's offsets; commits clients made to the slave meanwhile are overwritten.
"""

from __future__ import annotations

import json

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode

from .broker_helpers import MASTER_ADDR, broker
from .fakes import Driver, FakeTime, response

SLAVE_CH = "slave-sync-ch"


def commit(d: Driver, topic: str, queue_id: int, offset: int, group: str = "cg") -> None:
    resp = d.call(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                              "commitOffset": offset})
    assert resp is not None and resp.code == 0


def query(d: Driver, topic: str, queue_id: int, group: str = "cg") -> int:
    resp = d.call(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id})
    assert resp is not None and resp.code == 0
    return int(resp.fields["offset"])


def test_master_answers_get_all_consumer_offset():
    master = broker()
    empty = master.call(RC.GET_ALL_CONSUMER_OFFSET)
    assert empty is not None and (empty.code, empty.json_body()) == (0, {"offsetTable": {}})
    commit(master, "A", 0, 7)
    commit(master, "A", 1, 9)
    commit(master, "B", 0, 1, group="cg2")
    body = master.call(RC.GET_ALL_CONSUMER_OFFSET).json_body()
    assert body == {"offsetTable": {"A@cg": {"0": 7, "1": 9}, "B@cg2": {"0": 1}}}


def registered_slave(time: FakeTime) -> Driver:
    slave = broker(broker_id=1, time=time)
    for req in slave.pending_to(code=RC.REGISTER_BROKER):
        slave.answer(req, response(fields={"masterAddr": MASTER_ADDR, "haServerAddr": "127.0.0.1:10912"}))
    assert slave.role.master_addr == MASTER_ADDR
    return slave


def serve_sync(master: Driver, slave: Driver) -> None:
    """Carry the slave's pending sync requests (topics, then offsets) to the master and back."""
    for code in (RC.GET_ALL_TOPIC_CONFIG, RC.GET_ALL_CONSUMER_OFFSET, RC.GET_ALL_DELAY_OFFSET):
        for req in slave.pending_to(MASTER_ADDR, code):
            slave.answer(req, master.serve(req, channel=SLAVE_CH))


def test_slave_adopts_master_offsets_on_the_sync_timer_and_answers_queries():
    time = FakeTime()
    master, slave = broker(time=time), registered_slave(time)
    commit(master, "A", 0, 7)
    assert query(slave, "A", 0) == 0  # nothing synced yet: never committed -> 0 (min offset 0)
    slave.advance(3000)  # SlaveSynchronize: initial 3 s
    (topics,) = slave.pending_to(MASTER_ADDR, RC.GET_ALL_TOPIC_CONFIG)
    assert not slave.pending_to(MASTER_ADDR, RC.GET_ALL_CONSUMER_OFFSET)  # one after the other
    slave.answer(topics, master.serve(topics, channel=SLAVE_CH))
    (offs,) = slave.pending_to(MASTER_ADDR, RC.GET_ALL_CONSUMER_OFFSET)
    assert offs.timeout_ms == 3000
    slave.answer(offs, master.serve(offs, channel=SLAVE_CH))
    assert query(slave, "A", 0) == 7
    assert json.loads(slave.store.files["config/consumerOffset.json"]) == {"offsetTable": {"A@cg": {"0": 7}}}

    commit(master, "A", 0, 12)
    slave.advance(10000 - 1)
    assert not slave.pending_to(MASTER_ADDR, RC.GET_ALL_TOPIC_CONFIG)
    slave.advance(1)  # every 10 s
    serve_sync(master, slave)
    assert query(slave, "A", 0) == 12


def test_slave_accepts_commits_and_the_next_sync_overwrites_them():
    """putAll: the master's topic@group entries replace the slave's whole entry; entries only
    the slave has are kept (SlaveSynchronize.syncConsumerOffset)."""
    time = FakeTime()
    master, slave = broker(time=time), registered_slave(time)
    commit(master, "A", 0, 7)
    commit(slave, "A", 0, 20)  # a client committed to the slave while the master was out of the route
    commit(slave, "A", 1, 4)
    commit(slave, "S", 0, 3)
    assert query(slave, "A", 0) == 20
    slave.timer("slave_sync")
    serve_sync(master, slave)
    assert query(slave, "A", 0) == 7
    assert query(slave, "A", 1) == 0  # gone with the slave's A@cg entry (never committed -> 0)
    assert query(slave, "S", 0) == 3


def test_sync_failure_keeps_the_table_and_a_master_does_not_sync():
    time = FakeTime()
    master, slave = broker(time=time), registered_slave(time)
    commit(slave, "A", 0, 5)
    slave.timer("slave_sync")
    (topics,) = slave.pending_to(MASTER_ADDR, RC.GET_ALL_TOPIC_CONFIG)
    slave.answer(topics, None)  # timeout: only logged, the offsets are still asked
    (offs,) = slave.pending_to(MASTER_ADDR, RC.GET_ALL_CONSUMER_OFFSET)
    slave.answer(offs, response(ResponseCode.SYSTEM_ERROR, remark="boom"))
    assert query(slave, "A", 0) == 5
    master.advance(20000)
    assert not master.pending_to(code=RC.GET_ALL_CONSUMER_OFFSET)
