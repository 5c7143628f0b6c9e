"""Brokers of a DLedger group (docs/rocketmq-model.md §8.3) on the fake network: the elected peer
becomes master and registers as brokerId 0, a send is answered once a quorum holds it, pulls see
committed messages only, a follower refuses sends, and a killed master's successor serves on."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.store.message_store import queue_file
from tests.roles.dledger_brokers import NAMESRV, BrokerNet
from tests.strategies import bodies

PC_BUSY = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"


def started(seed: int = 1, topic: str = "T") -> tuple[BrokerNet, str]:
    net = BrokerNet(seed=seed)
    net.start()
    master = net.wait_for_master()
    net.run_for(300)
    ch = net.call(master, RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": 2, "writeQueueNums": 2,
                                                        "perm": 6, "topicFilterType": "SINGLE_TAG"})
    net.run_for(50)
    assert net.answers[ch].code == R.SUCCESS
    return net, master


def brokers_on_namesrv(net: BrokerNet) -> dict[int, str]:
    table = net.drivers[NAMESRV].role.rim.brokerAddrTable  # type: ignore[attr-defined]
    return dict(table["broker-a"].brokerAddrs)


def test_the_leader_becomes_master_with_id_0_and_the_followers_slaves_n_plus_1() -> None:
    net, master = started()
    leader = net.leader()
    assert leader == master
    for name in net.members:
        b = net.broker(name)
        peer = name.rsplit("-", 1)[1]
        want = (0, "SYNC_MASTER") if name == master else (int(peer[1:]) + 1, "SLAVE")
        assert (b.broker_id, b.store_cfg.brokerRole) == want
        assert net.drivers[name].events("broker.role")[-1]["broker_id"] == want[0]
    assert brokers_on_namesrv(net) == {net.broker(n).broker_id: net.addrs[n] for n in net.members}


def test_a_send_is_answered_once_a_quorum_holds_it_and_pulls_see_only_committed_messages() -> None:
    net, master = started()
    follower = next(n for n in net.members if n != master)
    ch = net.send(master, "T", "first")
    net.run_for(0.1)
    assert ch not in net.answers  # not before a follower holds it
    net.run_for(100)
    answer = net.answers[ch]
    assert answer.code == R.SUCCESS and answer.fields["queueOffset"] == 0
    # the follower stores it when it learns of the commit (the next push, or a bare COMMIT after 1 s)
    net.run_for(1500)
    assert [body_bytes(r) for r in net.broker(follower).store.queues[("T", 0)]] == [b"first"]
    assert net.broker(master).store.queues[("T", 0)][0]["offsetMsgId"] == answer.fields["msgId"]


def test_a_follower_answers_14_and_a_group_without_quorum_answers_1_after_2500_ms() -> None:
    net, master = started()
    follower = next(n for n in net.members if n != master)
    ch = net.send(follower, "T", "to a slave")
    net.run_for(10)
    assert net.answers[ch].code == R.SERVICE_NOT_AVAILABLE
    for n in net.members:
        if n != master:
            net.kill(n)
    ch = net.send(master, "T", "alone")
    net.run_for(2400)
    assert ch not in net.answers
    net.run_for(200)
    assert (net.answers[ch].code, net.answers[ch].remark) == (R.SYSTEM_ERROR, PC_BUSY)


def test_a_killed_masters_successor_registers_its_own_address_as_id_0_and_keeps_every_acked_message() -> None:
    net, old = started()
    acked = [net.send(old, "T", f"m{i}", key=f"k{i}") for i in range(5)]
    net.run_for(500)
    assert all(net.answers[c].code == R.SUCCESS for c in acked)
    net.kill(old)
    new = net.wait_for_master()
    assert new != old
    net.run_for(200)
    assert brokers_on_namesrv(net).get(0) == net.addrs[new]
    ch = net.send(new, "T", "after")
    net.run_for(200)
    assert net.answers[ch].code == R.SUCCESS and net.answers[ch].fields["queueOffset"] == 5
    bodies_ = [body_bytes(r) for r in net.broker(new).store.queues[("T", 0)]]
    assert bodies_ == [b"m0", b"m1", b"m2", b"m3", b"m4", b"after"]
    # the old master comes back as a slave, its log agreeing, and its queue file holding the same lines
    net.restart(old)
    same = lambda: net.stores[old].files.get(queue_file("T", 0)) == net.stores[new].files[queue_file("T", 0)]  # noqa: E731
    start = net.time.mono_ms
    while not same() and net.time.mono_ms - start < 20000:  # a lost push is re-sent once a second (§8.2)
        net.run_for(500)
    assert net.broker(old).is_slave and same()
    assert not net.violations


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads=st.lists(bodies(), min_size=1, max_size=4))
def test_any_body_reaches_every_peer_and_survives_a_restart_of_all(payloads: list[bytes | str]) -> None:
    net, master = started()
    want = [p if isinstance(p, bytes) else p.encode() for p in payloads]
    chans = [net.send(master, "T", p, key=f"k{i}") for i, p in enumerate(want)]
    net.run_for(1500)
    assert all(net.answers[c].code == R.SUCCESS for c in chans)
    for n in list(net.members):
        net.kill(n)
    for n in net.members:
        net.restart(n)
    net.wait_for_master()
    net.run_for(1500)
    for n in net.members:
        got = [body_bytes(r) for r in net.broker(n).store.queues.get(("T", 0), [])]
        assert got == want, n


def ns_changes(net: BrokerNet) -> list[tuple[str, int, str]]:
    return [(e["broker_addr"], e["broker_id"], e["change"]) for e in net.drivers[NAMESRV].events("ns.broker")]


def test_a_paused_master_is_replaced_on_the_namesrv_and_comes_back_a_slave_answering_14() -> None:
    net, old = started()
    net.pause(old)
    new = net.wait_for_master()
    net.run_for(100)
    assert (net.addrs[new], 0, "role") in ns_changes(net)  # the follower's address moves to brokerId 0
    assert (net.addrs[old], 0, "replaced") in ns_changes(net)  # the frozen master's is out of the route
    net.resume(old)
    net.run_for(3000)  # its heartbeats meet a newer term: it steps down and re-registers as a slave
    assert net.broker(old).is_slave and net.broker(old).broker_id == int(old[-1]) + 1
    assert (net.addrs[old], net.broker(old).broker_id, "role") in ns_changes(net)
    ch = net.send(old, "T", "to the demoted master")
    net.run_for(10)
    assert net.answers[ch].code == R.SERVICE_NOT_AVAILABLE
    assert not net.violations


def test_a_delayed_message_parks_and_is_delivered_by_the_master_once_committed() -> None:
    net, master = started()
    header = {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": 1, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": {"UNIQ_KEY": "late", "DELAY": "1"}, "reconsumeTimes": 0, "unitMode": False}
    ch = net.call(master, RC.SEND_MESSAGE_V2, header, b"in a second")
    net.run_for(200)
    assert net.answers[ch].code == R.SUCCESS
    assert ("T", 1) not in net.broker(master).store.queues
    net.run_for(3000)  # level 1 is 1 s; the delivery is itself a DLedger entry
    delivered = net.broker(master).store.queues[("T", 1)]
    assert [body_bytes(r) for r in delivered] == [b"in a second"]
    assert [e["msg_id"] for e in net.drivers[master].events("delay.deliver")] == ["late"]


def test_a_preferred_leader_becomes_the_master_and_registers_as_id_0() -> None:
    net = BrokerNet(seed=2, config={"preferredLeaderId": "n1"})
    net.start()
    net.run_for(8000)
    assert net.master() == "broker-a-n1"
    assert brokers_on_namesrv(net)[0] == net.addrs["broker-a-n1"]


def test_peers_of_one_run_draw_their_own_vote_backoffs() -> None:
    """Every node of a run gets the run's seed; two candidates drawing the same backoffs would
    ballot in lockstep and split the vote round after round (seen: 78 cluster s without a leader)."""
    from rmqemu.emulator.roles.broker.broker import Broker
    from rmqemu.emulator.roles.common.node_spec import NodeSpec

    def peer(name: str) -> Broker:
        spec = NodeSpec(name=name, role="broker", seed=40, broker="broker-a", config={
            "enableDLegerCommitLog": True, "dLegerGroup": "broker-a", "dLegerSelfId": name[-2:],
            "dLegerPeers": "n0-broker-a-n0;n1-broker-a-n1;n2-broker-a-n2"})
        return Broker.from_spec(spec, "127.0.0.1:1", lambda p: None)

    def draws(b: Broker) -> list[int]:
        assert b.dledger is not None
        return [b.dledger.server.elector.rng.randrange(700) for _ in range(5)]

    assert draws(peer("broker-a-n1")) != draws(peer("broker-a-n2"))
    assert draws(peer("broker-a-n1")) == draws(peer("broker-a-n1"))  # and one seed gives one sequence


def test_a_real_clients_send_is_recorded_when_the_quorum_acks_it() -> None:
    """The answer to a real client's send leaves from a follower's reply to a push, not from the
    send's own handler: the broker still writes the client's ``send`` line (docs/real-clients.md)."""
    net, master = started()
    ch = net.send(master, "T", "from a real client", key="real-1", remoting=True)
    net.run_for(200)
    assert net.answers[ch].code == R.SUCCESS
    lines = [e for e in net.drivers[master].events("send") if e["msg_id"] == "real-1"]
    assert [(e["outcome"], e["code"], e["broker_addr"]) for e in lines] == [("ok", 0, net.addrs[master])]
