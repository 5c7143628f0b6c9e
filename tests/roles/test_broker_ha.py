"""HA replication, master <-> slave through the fakes: the long-polled HA_TRANSFER loop, what the
slave stores and serves, and pacing when the master is gone (ha.py; the SYNC_MASTER wait:
test_broker_ha_sync.py)."""

from __future__ import annotations

from typing import Any

from rmqemu.emulator.protocol import EmulatorCode, Flag, Frame
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.ha_client import RETRY_TIMER
from rmqemu.emulator.roles.common.base import After, Cancel, Request

from .broker_helpers import MASTER_ADDR, broker, heartbeat, pull, send
from .fakes import Driver, FakeStore, FakeTime, response

HA = EmulatorCode.HA_TRANSFER
HOLD_MS = 5000
RETRY_MS = 5000
HA_CH = "ha-ch"


class Link:
    """Carries a slave's HA requests to its master and the master's answers (also late ones,
    to held requests) back, as the runtime would."""

    def __init__(self, master: Driver, slave: Driver) -> None:
        self.master, self.slave = master, slave
        self.waiting: dict[int, Request] = {}
        self.opaques = iter(range(10_000, 1 << 30))
        self.cursor = master.mark()
        self.delivered = 0

    def pump(self, rounds: int = 1000) -> None:
        for _ in range(rounds):
            moved = False
            for req in self.slave.pending_to(MASTER_ADDR, HA):
                if req in self.waiting.values():
                    continue
                opaque = next(self.opaques)
                self.waiting[opaque] = req
                frame = Frame(code=req.frame.code, opaque=opaque, flag=Flag.REQUEST, fields=req.frame.fields)
                self.master.deliver(frame, channel=HA_CH, peer="broker-a-1")
                self.delivered += 1
                moved = True
            for reply in self.master.replies(HA_CH, self.cursor):
                req = self.waiting.pop(reply.frame.opaque, None)
                if req is not None and req in self.slave.pending:
                    self.slave.answer(req, reply.frame)
                    moved = True
            self.cursor = self.master.mark()
            if not moved:
                return
        raise AssertionError("the HA loop never settled")


def pair(master_config: dict[str, Any] | None = None, slave_config: dict[str, Any] | None = None,
         slave_store: FakeStore | None = None) -> tuple[Driver, Driver, Link]:
    time = FakeTime()
    master = broker(config=master_config, time=time)
    slave = broker(broker_id=1, config=slave_config, time=time, store=slave_store)
    return master, slave, Link(master, slave)


def registered(slave: Driver, master_addr: str | None = MASTER_ADDR) -> None:
    """A register round of the slave, answered with the master's address."""
    if not slave.pending_to(code=RC.REGISTER_BROKER):
        slave.timer("register")
    for req in slave.pending_to(code=RC.REGISTER_BROKER):
        slave.answer(req, response(fields={"masterAddr": master_addr,
                                           "haServerAddr": master_addr and "127.0.0.1:10912"}))


def sync_topics(master: Driver, slave: Driver) -> None:
    slave.timer("slave_sync")
    for req in slave.pending_to(MASTER_ADDR, RC.GET_ALL_TOPIC_CONFIG):
        slave.answer(req, master.call(RC.GET_ALL_TOPIC_CONFIG))


def commitlog(d: Driver) -> dict[str, str]:
    return {k: v for k, v in d.store.files.items() if k.startswith("store/commitlog/")}


def put_some(master: Driver, n: int, topics=("A", "B"), queues: int = 2) -> None:
    for i in range(n):
        send(master, topics[i % len(topics)], body=f"m{i}", queue_id=(i // len(topics)) % queues,
             props={"UNIQ_KEY": f"U{i}"})


def test_slave_replicates_same_topics_queues_offsets_and_files():
    master, slave, link = pair()
    put_some(master, 10)
    registered(slave)
    (req,) = slave.pending_to(MASTER_ADDR, HA)
    assert req.frame.fields["offset"] == 0 and req.timeout_ms == 20000
    link.pump()
    assert slave.role.store.snapshot() == master.role.store.snapshot() == {"A:0": 3, "A:1": 2, "B:0": 3, "B:1": 2}
    for key, msgs in master.role.store.queues.items():
        assert [(r["queueOffset"], r["commitLogOffset"], r["msgId"], r["offsetMsgId"], r["body"]) for r in msgs] == \
            [(r["queueOffset"], r["commitLogOffset"], r["msgId"], r["offsetMsgId"], r["body"])
             for r in slave.role.store.queues[key]]
    assert commitlog(slave) == commitlog(master)  # the very lines the master wrote
    assert slave.role.store.max_phy_offset() == master.role.store.max_phy_offset()
    ev = slave.events("broker.ha")
    assert ev == [{"change": "connected", "master": MASTER_ADDR, "offset": 0,
                   "master_offset": master.role.store.max_phy_offset()}]
    assert master.events("broker.ha")[0]["change"] == "slave_connected"
    # caught up: the next request is held on the master for the heartbeat interval
    assert master.role.ha.snapshot()["held_transfers"] == 1
    assert isinstance(master.actions[-1], After) and master.actions[-1].delay_ms == HOLD_MS


def test_batches_are_capped_and_incremental():
    master, slave, link = pair(master_config={"haTransferBatchSize": 1000})
    put_some(master, 12)
    registered(slave)
    link.pump()
    assert slave.role.ha_client.batches >= 4  # lines of ~280 bytes, 1000 per batch
    assert commitlog(slave) == commitlog(master)
    before = slave.role.ha_client.batches
    send(master, "A", body="late", queue_id=0, props={"UNIQ_KEY": "late"})
    link.pump()
    assert slave.role.ha_client.batches == before  # ASYNC_MASTER: held until its 100 ms wait ends
    fired = master.advance(100)
    assert [a for a in fired if isinstance(a, Cancel)]
    link.pump()
    assert slave.role.ha_client.batches == before + 1
    assert slave.role.store.queues[("A", 0)][-1]["body"] == "late"


def test_held_request_answered_empty_after_heartbeat_interval_and_paced():
    master, slave, link = pair()
    registered(slave)
    link.pump()
    start = link.delivered
    for _ in range(20):
        master.advance(HOLD_MS)
        link.pump()
    assert link.delivered - start == 20  # one request per heartbeat interval while idle
    assert slave.role.ha_client.connected and slave.role.ha_client.batches == 0
    assert len(slave.events("broker.ha")) == 1


def test_slave_catches_up_after_starting_late_and_after_its_restart():
    store = FakeStore()
    master, slave, link = pair(slave_store=store)
    put_some(master, 6)
    registered(slave)
    sync_topics(master, slave)
    link.pump()
    time = slave.time
    # the slave restarts over its store dir: restored, asks from its own offset, no duplicates
    slave2 = broker(broker_id=1, time=time, store=store)
    link2 = Link(master, slave2)
    assert slave2.role.store.snapshot() == master.role.store.snapshot()
    put_some(master, 4)
    registered(slave2)
    (req,) = slave2.pending_to(MASTER_ADDR, HA)
    assert req.frame.fields["offset"] == slave.role.store.max_phy_offset()
    link2.pump()
    assert commitlog(slave2) == commitlog(master)
    assert slave2.role.ha_client.accepted == 4


def test_master_restart_keeps_commit_log_offsets_contiguous():
    mstore = FakeStore()
    master = broker(store=mstore)
    put_some(master, 3)
    end = master.role.store.max_phy_offset()
    lines, nxt = master.role.store.transfer_from(0, 1 << 20)
    master2 = broker(store=mstore, time=master.time)
    assert master2.role.store.max_phy_offset() == end == nxt
    assert master2.role.store.transfer_from(0, 1 << 20) == (lines, nxt)
    resp, _ = send(master2, "A", body="after", queue_id=1)
    assert master2.role.store.queues[("A", 1)][-1]["commitLogOffset"] == end


def test_slave_serves_replicated_messages_and_still_refuses_writes():
    master, slave, link = pair()
    put_some(master, 4, topics=("A",), queues=1)
    registered(slave)
    sync_topics(master, slave)
    link.pump()
    heartbeat(slave, "c1", "cg", {"A": 1}, "ch1")
    resp, _ = pull(slave, "A")
    assert resp.code == R.SUCCESS and [m["msgId"] for m in resp.json_body()] == ["U0", "U1", "U2", "U3"]
    assert resp.fields["suggestWhichBrokerId"] == 0
    resp, _ = send(slave, "A")
    assert resp.code == R.SERVICE_NOT_AVAILABLE


def test_slave_held_pull_woken_by_the_hold_check_not_by_arrival():
    master, slave, link = pair(master_config={"brokerRole": "SYNC_MASTER"})
    send(master, "A", props={"UNIQ_KEY": "first"})
    registered(slave)
    sync_topics(master, slave)
    link.pump()
    heartbeat(slave, "c1", "cg", {"A": 1}, "ch1")
    resp, _ = pull(slave, "A", offset=1, sys_flag=2, suspend_ms=150)
    assert resp is None
    m = slave.mark()
    send(master, "A", props={"UNIQ_KEY": "second"})
    link.pump()  # replicated at once (SYNC_MASTER wakes the transfer) ...
    assert slave.role.store.max_offset("A", 0) == 2
    assert slave.replies("cons-ch", m) == []  # ... but a slave's reput notifies nobody
    slave.advance(5000)  # PullRequestHoldService's 5 s check
    (answer,) = slave.replies("cons-ch", m)
    assert answer.frame.code == R.SUCCESS and [x["msgId"] for x in answer.frame.json_body()] == ["second"]


def test_no_busy_loop_when_the_master_is_gone():
    master, slave, link = pair()
    registered(slave)
    link.pump()
    (held,) = slave.pending_to(MASTER_ADDR, HA)
    m = slave.mark()
    slave.channel("disconnected", addr=MASTER_ADDR)  # the master died
    assert slave.events("broker.ha", m) == [{"change": "disconnected", "master": MASTER_ADDR, "offset": 0,
                                             "reason": "channel disconnected"}]
    assert After(RETRY_TIMER, RETRY_MS) in slave.actions[m:]
    slave.answer(held, None)  # the old request's timeout later: ignored, no second retry
    assert slave.pending_to(MASTER_ADDR, HA) == []
    tries = 0
    for _ in range(100):  # 100 s; every attempt fails at once (connection refused)
        slave.advance(1000)
        for req in slave.pending_to(MASTER_ADDR, HA):
            tries += 1
            slave.answer(req, None)
    assert tries == 100_000 // RETRY_MS
    assert len(slave.events("broker.ha", m)) == 1  # transitions only
    registered(slave, None)  # the namesrv knows no master: the HA address is kept (docs/rocketmq-model.md §2.1)
    assert slave.role.ha_client.master == MASTER_ADDR and slave.role.master_addr is None


def test_new_master_address_restarts_the_loop_and_ignores_the_old_answer():
    master, slave, link = pair()
    registered(slave)
    link.pump()
    (old,) = slave.pending_to(MASTER_ADDR, HA)
    m = slave.mark()
    registered(slave, "127.0.0.1:20000")
    (new,) = slave.pending_to("127.0.0.1:20000", HA)
    assert slave.events("broker.ha", m)[0]["reason"] == "master changed"
    assert slave.answer(old, response(fields={"maxOffset": 0})) == []
