"""Namesrv and brokers driven together through the fakes (no sockets): the route a client would
see through register, auto-create, master death and restart."""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode
from rmqemu.emulator.roles.broker.broker import Broker
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.namesrv.namesrv import NameServer

from .broker_helpers import NS1, send, spec
from .fakes import Driver, FakeStore, FakeTime


class Cluster:
    def __init__(self) -> None:
        self.time = FakeTime()
        self.ns = Driver(NameServer("namesrv-0", NS1), time=self.time)
        self.ns.start()
        self.brokers: dict[str, Driver] = {}
        self.cursor: dict[str, int] = {}

    def add(self, name: str, bid: int, addr: str, config: dict | None = None, store: FakeStore | None = None) -> Driver:
        s = {**spec(bid, config), "name": f"{name}-{bid}", "broker": name, "namesrv_addrs": [NS1]}
        store = store if store is not None else FakeStore()
        d = Driver(Broker.from_spec(NodeSpec.from_dict(s), addr, store), time=self.time, store=store)
        self.brokers[addr] = d
        self.cursor[addr] = 0
        d.start()
        self.pump()
        return d

    def pump(self) -> None:
        """Deliver pending requests and new oneways from brokers to the namesrv (channel per broker)."""
        for addr, d in self.brokers.items():
            start = self.cursor.get(addr, 0)
            self.cursor[addr] = len(d.actions)
            for ow in d.oneways(since=start):
                if ow.addr == NS1:
                    self.ns.serve(ow, channel=f"ch-{addr}", peer=addr)
            for req in list(d.pending_to(NS1)):
                d.answer(req, self.ns.serve(req, channel=f"ch-{addr}", peer=addr))

    def route(self, topic: str):
        return self.ns.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, channel="client")


A0, A1, B0 = "127.0.0.1:10911", "127.0.0.1:10921", "127.0.0.1:10931"


def test_auto_create_lands_on_one_broker_only_and_master_death():
    c = Cluster()
    a0 = c.add("broker-a", 0, A0)
    slave = c.add("broker-a", 1, A1)
    c.add("broker-b", 0, B0)
    assert slave.role.master_addr == A0
    tbw = c.route("TBW102").json_body()
    assert [q["brokerName"] for q in tbw["queueDatas"]] == ["broker-a", "broker-b"]
    send(a0, "Fresh")
    c.pump()  # the oneway forced register after auto-create
    body = c.route("Fresh").json_body()
    assert [q["brokerName"] for q in body["queueDatas"]] == ["broker-a"]  # issue #566 imbalance
    assert c.ns.events("ns.route")[-1] == {"topic": "Fresh",
                                           "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}],
                                           "masters": ["broker-a"]}
    m = c.ns.mark()
    c.ns.channel("closed", f"ch-{A0}")  # the master process dies
    fresh = [e for e in c.ns.events("ns.route", m) if e["topic"] == "Fresh"]
    assert fresh == [{"topic": "Fresh", "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}],
                      "masters": []}]
    slave.timer("register")
    c.pump()
    assert slave.role.master_addr is None  # namesrv knows no live master any more
    assert c.route("Fresh").json_body()["brokerDatas"][0]["brokerAddrs"] == {"1": A1}


def test_restart_with_auto_create_off_keeps_tbw102_in_route():
    c = Cluster()
    store = FakeStore()
    a0 = c.add("broker-a", 0, A0, store=store)
    send(a0, "Fresh")
    c.pump()
    c.ns.channel("closed", f"ch-{A0}")
    assert c.route("TBW102").code == ResponseCode.TOPIC_NOT_EXIST
    c.time.mono_ms += 1000
    c.add("broker-a", 0, A0, config={"autoCreateTopicEnable": False}, store=store)
    body = c.route("TBW102").json_body()
    assert body["queueDatas"][0]["perm"] == 7  # issue #5055: the restored TBW102 is registered again
