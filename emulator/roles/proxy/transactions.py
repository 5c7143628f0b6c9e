"""Transactional messages through the proxy: the brokers' check-backs relayed to the clients'
Telemetry streams (docs/rocketmq-model.md §10.1).

As 5.x's ``ClusterTransactionService``: every ``transactionHeartbeatPeriodSecond`` (20 s, the first a
period after start, so a half checked sooner finds no channel yet) the proxy
heartbeats, to the master of every broker of each topic its producers publish to, a producer group
named after the topic, so a broker's check service has a channel for the half's group (``PGROUP``
= the topic). A CHECK_TRANSACTION_STATE arriving on that channel becomes a
``RecoverOrphanedTransactionCommand`` on the Telemetry stream of a client publishing that topic;
the half's place is kept so the client's EndTransaction (``SOURCE_SERVER_CHECK``) can name it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import BadFrame, RequestCode, request
from rmqemu.emulator.roles.common.base import Action, Emit, Every, Inbound, Now, Reply, Request
from rmqemu.emulator.roles.common.server_dispatch import HeaderError, h_int, parse_properties
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.messages import to_message

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

TIMER = "tx_heartbeat"
HEARTBEAT_TIMEOUT_MS = 3000
CLIENT_ID = "rmq-proxy-producer-client"  # TRANS_HEARTBEAT_CLIENT_ID


class TransactionRelay:
    def __init__(self, proxy: "Proxy") -> None:
        self.proxy = proxy
        self.relayed = self.unclaimed = 0
        self._turn = 0

    def start(self) -> list[Action]:
        period = self.proxy.cfg.transactionHeartbeatPeriodSecond * 1000  # the first one a period after start
        return [Every(TIMER, period, period)]

    def topics(self) -> list[str]:
        """The topics the connected producers publish to (their Settings)."""
        found = set()
        for s in self.proxy.sessions.by_client.values():
            if s.settings.WhichOneof("pub_sub") == "publishing":
                found.update(t.name for t in s.settings.publishing.topics)
        return sorted(found)

    def heartbeat(self, now: Now) -> list[Action]:
        """One HEART_BEAT per master address naming a producer group per topic it serves."""
        by_addr: dict[str, list[str]] = {}
        for topic in self.topics():
            view = self.proxy.routes.cached(topic)
            for addr in sorted(set((view.masters if view is not None else {}).values())):
                by_addr.setdefault(addr, []).append(topic)
        body = lambda groups: {"clientID": CLIENT_ID, "consumerDataSet": [],  # noqa: E731
                               "producerDataSet": [{"groupName": g} for g in groups]}
        return [Request(addr, request(RequestCode.HEART_BEAT, {}, body(groups)), HEARTBEAT_TIMEOUT_MS,
                        lambda resp, n: []) for addr, groups in sorted(by_addr.items())]

    def check(self, msg: Inbound, now: Now) -> list[Action]:
        """A broker's CHECK_TRANSACTION_STATE on the proxy's connection to it."""
        f = msg.frame
        try:
            clo, tso = h_int(f, "commitLogOffset", required=True), h_int(f, "tranStateTableOffset", required=True)
            record = f.json_body()
        except (HeaderError, BadFrame, ValueError):
            return []
        if not isinstance(record, dict) or clo is None or tso is None:
            return []
        props = parse_properties(record.get("properties"))
        topic = str(record.get("topic") or props.get("PGROUP", ""))
        tx_id = str(f.fields.get("transactionId") or props.get("UNIQ_KEY") or "")
        addr = msg.channel.removeprefix("out:")
        broker = next((name for v in [self.proxy.routes.cached(topic)] if v is not None
                       for name, a in v.masters.items() if a == addr), None)
        targets = [s for s in self.proxy.sessions.by_client.values() if s.channel is not None
                   and s.settings.WhichOneof("pub_sub") == "publishing"
                   and topic in {t.name for t in s.settings.publishing.topics}]
        if not targets or broker is None:
            self.unclaimed += 1
            return []
        self._turn += 1
        session = targets[self._turn % len(targets)]
        self.proxy.sending.halves[(topic, tx_id)] = {"broker": broker, "tran_offset": tso, "commit_log_offset": clo}
        command = pb.TelemetryCommand(recover_orphaned_transaction_command=pb.RecoverOrphanedTransactionCommand(
            message=to_message(record, topic), transaction_id=tx_id))
        self.relayed += 1
        assert session.channel is not None
        return [Reply(session.channel, v2.push(command)),
                Emit("proxy.tx_check", {"topic": topic, "msg_id": props.get("UNIQ_KEY") or tx_id, "broker": broker,
                                        "client_id": session.client_id, "proxy": self.proxy.name},
                     node=session.peer)]

    def state(self) -> dict[str, Any]:
        return {"tx_checks_relayed": self.relayed, "tx_checks_unclaimed": self.unclaimed}
