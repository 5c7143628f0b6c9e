"""HA replication's SYNC_MASTER wait through the fakes: SLAVE_NOT_AVAILABLE without a slave or
past the fall-behind limit, the wait for the slave's report and its timeout, and closed channels (ha.py)."""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from tests.roles.broker_helpers import broker, heartbeat, send
from tests.roles.test_broker_ha import HA_CH, HOLD_MS, pair, registered


def test_sync_master_without_slave_answers_slave_not_available_and_keeps_the_message():
    master = broker(config={"brokerRole": "SYNC_MASTER"})
    resp, _ = send(master, "A", props={"UNIQ_KEY": "u"})
    assert resp.code == R.SLAVE_NOT_AVAILABLE and resp.fields["queueOffset"] == 0 and resp.fields["msgId"]
    assert master.role.store.max_offset("A", 0) == 1
    resp, _ = send(master, "A", props={"UNIQ_KEY": "v", "WAIT": "false"})
    assert resp.code == R.SUCCESS


def test_sync_master_waits_for_the_slave_then_times_out_when_it_stops():
    master, slave, link = pair(master_config={"brokerRole": "SYNC_MASTER"})
    registered(slave)
    link.pump()
    resp, acts = send(master, "A", props={"UNIQ_KEY": "u"})
    assert resp is None  # held until the slave reports the message's end offset
    link.pump()
    (answer,) = master.replies("prod-ch")
    assert answer.frame.code == R.SUCCESS and answer.frame.fields["queueOffset"] == 0
    assert master.role.ha.push2slave_max_offset == master.role.store.max_phy_offset()
    # the slave freezes (no link.pump: its requests never reach the master): the wait times out
    m = master.mark()
    master.advance(HOLD_MS)  # the held transfer answers empty, nobody asks again
    resp, _ = send(master, "A", props={"UNIQ_KEY": "w"})
    assert resp is None
    master.advance(5000)
    (late,) = master.replies("prod-ch", m)
    assert late.frame.code == R.FLUSH_SLAVE_TIMEOUT and late.frame.fields["queueOffset"] == 1
    # 20 s without a request: the connection is gone, so the next send is not even waited for
    master.advance(20000)
    resp, _ = send(master, "A", props={"UNIQ_KEY": "x"})
    assert resp.code == R.SLAVE_NOT_AVAILABLE
    assert master.events("broker.ha")[-1]["change"] == "slave_disconnected"


def test_sync_master_fallbehind_limit_and_send_back_status():
    master, slave, link = pair(master_config={"brokerRole": "SYNC_MASTER", "haSlaveFallbehindMax": 100})
    registered(slave)
    link.pump()
    resp, _ = send(master, "A", props={"UNIQ_KEY": "u"})  # one line is > 100 bytes past the slave
    assert resp.code == R.SLAVE_NOT_AVAILABLE
    master2 = broker(config={"brokerRole": "SYNC_MASTER"})
    send(master2, "A", props={"UNIQ_KEY": "u"})
    heartbeat(master2, "c1", "cg", {"A": 1}, "ch1")
    orig = master2.role.store.queues[("A", 0)][0]
    resp = master2.call(RC.CONSUMER_SEND_MSG_BACK, {"offset": orig["commitLogOffset"], "group": "cg", "delayLevel": 0,
                                                    "originMsgId": "u", "originTopic": "A"})
    # asyncConsumerSendMsgBack sets WAIT=false: a SYNC_MASTER does not wait for a slave it lacks
    assert (resp.code, resp.remark) == (R.SUCCESS, None)
    assert master2.role.store.queues[("SCHEDULE_TOPIC_XXXX", 2)][0]["properties"]["WAIT"] == "false"


def test_closed_channels_drop_held_transfers_and_waits():
    master, slave, link = pair(master_config={"brokerRole": "SYNC_MASTER"})
    registered(slave)
    link.pump()
    resp, _ = send(master, "A", props={"UNIQ_KEY": "u"})
    assert resp is None and master.role.ha.snapshot()["sync_waits"] == 1
    master.channel("closed", "prod-ch")
    assert master.role.ha.snapshot()["sync_waits"] == 0
    link.pump()  # the slave's report for that message
    master.channel("closed", HA_CH)
    assert master.role.ha.snapshot() == {"slaves": [], "push2slave_max_offset": master.role.store.max_phy_offset(),
                                         "held_transfers": 0, "sync_waits": 0}
    assert master.events("broker.ha")[-1] == {"change": "slave_disconnected", "slave": "broker-a-1",
                                              "offset": master.role.store.max_phy_offset(), "reason": "closed"}
