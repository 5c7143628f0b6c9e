"""Timed messages in a DLedger group (docs/rocketmq-model.md §10.4): the master puts a held message on
its wheel once committed, and when it is killed before the instant, the newly elected master delivers
what the old one held: the held record is in every peer's log; what it had delivered before the last
checkpoint sync, it does not deliver again."""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.test_dledger_broker import started

TIMER = "rmq_sys_wheel_timer"


def timed_send(net, master: str, uniq: str, delay_sec: int, body: bytes) -> str:
    header = {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": 1, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": {"UNIQ_KEY": uniq, "TIMER_DELAY_SEC": str(delay_sec)}, "reconsumeTimes": 0,
              "unitMode": False}
    return net.call(master, RC.SEND_MESSAGE_V2, header, body)


def delivered(net, name: str) -> list[bytes]:
    return [body_bytes(r) for r in net.broker(name).store.queues.get(("T", 1), [])]


def test_the_master_delivers_a_committed_timed_message_at_its_instant() -> None:
    net, master = started()
    ch = timed_send(net, master, "soon", 2, b"in two seconds")
    net.run_for(200)
    assert net.answers[ch].code == R.SUCCESS and delivered(net, master) == []
    assert len(net.broker(master).store.queues[(TIMER, 0)]) == 1
    net.run_for(3000)
    assert delivered(net, master) == [b"in two seconds"]
    assert [e["msg_id"] for e in net.drivers[master].events("timer.deliver")] == ["soon"]


def test_a_new_master_delivers_what_the_killed_one_held() -> None:
    net, old = started()
    ch = timed_send(net, old, "held", 20, b"after the failover")
    net.run_for(500)
    assert net.answers[ch].code == R.SUCCESS
    net.kill(old)
    new = net.wait_for_master()
    assert new != old and delivered(net, new) == []
    assert net.broker(new).timer.started and net.broker(new).timer.wheel
    net.run_for(25000)
    assert delivered(net, new) == [b"after the failover"]
    (event,) = net.drivers[new].events("timer.deliver")
    assert event["msg_id"] == "held" and event["lateness_ms"] >= 0
    assert not net.violations


def test_a_new_master_starts_its_wheel_where_the_old_one_was_at_the_last_checkpoint_sync() -> None:
    """Followers take the master's timer checkpoint every 3 s (SlaveSynchronize.syncTimerCheckPoint),
    so after a failover what the old master delivered before the last sync is not delivered again,
    and what it still held is."""
    net, old = started()
    early, held = timed_send(net, old, "early", 2, b"before"), timed_send(net, old, "held", 60, b"after")
    net.run_for(40000)  # "early" delivered at 2 s; the followers learn their master at a registration (30 s)
    assert net.answers[early].code == net.answers[held].code == R.SUCCESS and delivered(net, old) == [b"before"]
    followers = [n for n in net.members if n != old]
    assert all(net.broker(n).timer.loaded.get("lastReadTimeMs", 0) > 0 for n in followers)
    net.kill(old)
    new = net.wait_for_master()
    net.run_for(40000)
    assert [e["msg_id"] for e in net.drivers[new].events("timer.deliver")] == ["held"]
    assert delivered(net, new) == [b"before", b"after"]  # "before" from the old master's log, once
    assert not net.violations
