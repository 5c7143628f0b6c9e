"""Transactional messages on a DLedger group (docs/rocketmq-model.md §9, §8.3) on the fake network:
a half and its commit wait for the quorum like any put, and a master killed between the half and
its end leaves the half to its successor, whose check service asks the producer and commits it."""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.dledger_brokers import BrokerNet

FAST = {"transactionCheckInterval": 2000, "transactionTimeOut": 1000}


def half_header(uniq: str, born: int) -> dict:
    return {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
            "queueId": 1, "sysFlag": 4, "bornTimestamp": born, "flag": 0, "reconsumeTimes": 0, "unitMode": False,
            "properties": {"UNIQ_KEY": uniq, "TRAN_MSG": "true", "PGROUP": "pg"}}


def end_fields(state: int, commit_log: int, uniq: str, from_check: bool = False) -> dict:
    return {"producerGroup": "pg", "tranStateTableOffset": state, "commitLogOffset": commit_log,
            "commitOrRollback": 8, "msgId": uniq, "fromTransactionCheck": from_check}


def started() -> tuple[BrokerNet, str]:
    net = BrokerNet(seed=3, config=FAST)
    net.start()
    master = net.wait_for_master()
    net.run_for(300)
    return net, master


def test_a_half_and_its_commit_are_answered_once_a_quorum_holds_them() -> None:
    net, master = started()
    ch = net.call(master, RC.SEND_MESSAGE_V2, half_header("u1", int(net.drivers[master].now().wall_ms)), b"tx")
    net.run_for(300)
    resp = net.answers[ch]
    assert resp.code == R.SUCCESS and resp.fields["queueId"] == 1
    assert [e["msg_id"] for e in net.drivers[master].events("tx.half")] == ["u1"]
    state, commit_log = int(resp.fields["queueOffset"]), int(str(resp.fields["msgId"])[-16:], 16)
    net.call(master, RC.END_TRANSACTION, end_fields(state, commit_log, "u1"))
    op = ("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0)
    start = net.time.mono_ms  # a follower learns the op mark committed from the next push or heartbeat (2 s)
    while not all(op in net.broker(p).store.queues for p in net.members_alive()) and net.time.mono_ms - start < 5000:
        net.run_for(100)
    for peer in net.members_alive():  # the committed message and its op mark reached every peer
        store = net.broker(peer).store
        assert [body_bytes(m) for m in store.queues[("T", 1)]] == [b"tx"]
        assert [body_bytes(m) for m in store.queues[op]] == [b"0"]
    (event,) = net.drivers[master].events("tx.end")
    assert event["result"] == "ok" and event["queue_offset"] == 0
    assert not net.violations


def test_a_master_killed_between_half_and_end_leaves_the_half_to_its_successor() -> None:
    net, old = started()
    ch = net.call(old, RC.SEND_MESSAGE_V2, half_header("u1", int(net.drivers[old].now().wall_ms)), b"tx")
    net.run_for(300)
    assert net.answers[ch].code == R.SUCCESS
    net.kill(old)  # the producer's oneway end is lost with it
    new = net.wait_for_master()
    net.call(new, RC.HEART_BEAT, {}, {"clientID": "p@1", "producerDataSet": [{"groupName": "pg"}],
                                      "consumerDataSet": []})
    start = net.time.mono_ms
    while not net.drivers[new].events("tx.check") and net.time.mono_ms - start < 10000:
        net.run_for(100)
    (check,) = net.drivers[new].events("tx.check")
    assert check["msg_id"] == "u1" and check["client_id"] == "p@1" and check["check_times"] == 1
    pushed = [f for f in net.answers.values() if f.code == RC.CHECK_TRANSACTION_STATE]
    assert len(pushed) == 1
    f = pushed[0].fields
    net.call(new, RC.END_TRANSACTION, end_fields(int(f["tranStateTableOffset"]), int(f["commitLogOffset"]), "u1",
                                                 from_check=True))
    net.run_for(300)
    assert [body_bytes(m) for m in net.broker(new).store.queues[("T", 1)]] == [b"tx"]
    assert not net.violations
