"""A DLedger group of real brokers and a namesrv on the fake network of :mod:`tests.roles.dledger_net`.

Each peer is a :class:`Broker` in DLedger mode (``broker-a-n0``, ...) under the real node runtime,
its DLedger member watched by the same invariant checks as the bare members'; ``namesrv-0`` is a
:class:`NameServer`. A test talks to a broker as a client would: :meth:`BrokerNet.call` sends a
request on a channel of its own and the answer, however late, lands in :attr:`BrokerNet.answers`.
"""

from __future__ import annotations

import itertools
from typing import Any

from rmqemu.emulator.protocol import Flag, Frame, encode_body
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol.frame import REMOTING_PREFIX
from rmqemu.emulator.roles.broker.broker import Broker
from rmqemu.emulator.roles.common.base import Role
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.dledger.server import Hooks
from rmqemu.emulator.roles.namesrv.namesrv import NameServer
from rmqemu.emulator.transport.base import Received
from tests.roles.dledger_net import Net
from tests.roles.fakes import FakeStore

NAMESRV, NAMESRV_ADDR = "namesrv-0", "10.0.0.100:9876"


class BrokerNet(Net):
    def __init__(self, peers: int = 3, seed: int = 0, config: dict[str, Any] | None = None) -> None:
        super().__init__(peers=peers, seed=seed, group="broker-a")
        self.config = dict(config or {})
        self.addrs[NAMESRV] = NAMESRV_ADDR
        self.by_addr[NAMESRV_ADDR] = NAMESRV
        self.stores[NAMESRV] = FakeStore()
        self.offsets[NAMESRV] = 0.0
        self.answers: dict[str, Frame] = {}
        self.opaques = itertools.count(1)

    def start(self) -> None:
        self._spawn(NAMESRV)
        for name in self.members:
            self._spawn(name)
        self._push_peers()

    def _make_role(self, name: str, seed: int) -> Role:
        if name == NAMESRV:
            return NameServer(name, NAMESRV_ADDR)
        peers = ";".join(f"{p}-{self.names[p]}" for p in self.ids)
        spec = NodeSpec(name=name, role="broker", seed=seed, broker=self.group, cluster="DefaultCluster",
                        namesrv_addrs=(NAMESRV_ADDR,), config={
                            **self.config, "enableDLegerCommitLog": True, "dLegerGroup": self.group,
                            "dLegerPeers": peers, "dLegerSelfId": name.rsplit("-", 1)[1]})
        broker = Broker.from_spec(spec, self.addrs[name], self.stores[name])
        assert broker.dledger is not None
        server, own = broker.dledger.server, broker.dledger.server.hooks

        def on_role(term, role, now):  # type: ignore[no-untyped-def]
            self.on_role(name, server, term, role)
            return own.on_role(term, role, now)

        def on_commit(entries, now):  # type: ignore[no-untyped-def]
            self.commits.setdefault(name, []).extend(entries)
            return own.on_commit(entries, now)

        server.hooks = Hooks(on_role, on_commit, own.on_truncate)
        return broker

    def broker(self, name: str) -> Broker:
        role = self.drivers[name].role
        assert isinstance(role, Broker)
        return role

    def master(self) -> str | None:
        """The live peer whose broker is master (brokerId 0), if one is."""
        found = [n for n in self.members_alive() if self.broker(n).broker_id == 0]
        assert len(found) <= 1, found
        return found[0] if found else None

    def wait_for_master(self, bound_ms: float = 30000) -> str:
        start = self.time.mono_ms
        while (m := self.master()) is None and self.time.mono_ms - start < bound_ms:
            self.run_for(50)
        assert m is not None, [self.server(n).snapshot() for n in self.members_alive()]
        return m

    # ------------------------------------------------------------------ a client's requests

    def call(self, name: str, code: int, fields: dict[str, Any], body: Any = None, remoting: bool = False) -> str:
        """Send a request to node ``name`` as a client on a channel of its own (a real client's
        remoting connection with ``remoting``); returns the channel, under which :attr:`answers`
        gets the response when it comes (never for a dead node)."""
        channel = f"{REMOTING_PREFIX if remoting else ''}client-{next(self.opaques)}"
        frame = Frame(code=int(code), opaque=1, flag=Flag.REQUEST, fields=fields, body=encode_body(body))
        if name in self.drivers:
            self.drivers[name].transport.push(Received(channel, "pg-0", frame))
        return channel

    def send(self, name: str, topic: str, body: bytes | str, queue_id: int = 0, key: str = "k",
             remoting: bool = False) -> str:
        header = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
                  "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
                  "properties": {"UNIQ_KEY": key}, "reconsumeTimes": 0, "unitMode": False, "batch": False}
        return self.call(name, RC.SEND_MESSAGE_V2, header, body if isinstance(body, bytes) else body.encode(),
                         remoting=remoting)

    def _route(self, src: str, sent: Any) -> None:
        if sent.channel is not None and str(sent.channel).removeprefix(REMOTING_PREFIX).startswith("client-"):
            self.answers[str(sent.channel)] = sent.frame
            return
        super()._route(src, sent)
