"""A proxy in front of a namesrv and brokers, all real roles under the fake runtime (no sockets):
gRPC calls go in as the gRPC port hands them over (docs/design.md §2, "The gRPC port") and the
proxy's requests to the namesrv and brokers are served by those roles' drivers."""

from __future__ import annotations

import itertools
from typing import Any

from google.protobuf.message import Message

from rmqemu import wire_json
from rmqemu.emulator.protocol import EmulatorCode, Flag, Frame, encode
from rmqemu.emulator.roles.common.base import Emit, Oneway, Reply, Request
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.proxy import Proxy, ProxyConfig

from .fakes import Driver
from .test_cluster_flow import NS1, Cluster

PROXY_ADDR, GRPC_ADDR = "127.0.0.1:18080", "127.0.0.1:18081"


class ProxyRig:
    def __init__(self, cfg: ProxyConfig | None = None) -> None:
        self.cluster = Cluster()
        self.proxy = Driver(Proxy("proxy-0", PROXY_ADDR, cfg or ProxyConfig(), [NS1], ["namesrv-0"],
                                  grpc_addr=GRPC_ADDR, seed=3), time=self.cluster.time)
        self.proxy.start()
        self._channels = itertools.count(1)

    def pump(self) -> None:
        """Serve the proxy's pending requests by the roles they are addressed to, until none is
        left that gets an immediate answer (a held POP stays pending)."""
        progressed = True
        while progressed:
            progressed = False
            for req in list(self.proxy.pending):
                target = self.cluster.ns if req.addr == NS1 else self.cluster.brokers.get(req.addr)
                if target is None:
                    continue
                resp = target.serve(req, channel=f"proxy@{req.addr}", peer="proxy-0")
                if resp is not None:
                    self.proxy.answer(req, resp)
                    progressed = True

    def call(self, method: str, request: Message | bytes, client_id: str | None = "cid-1",
             channel: str | None = None, peer: str = "client@42") -> list[Any]:
        """Deliver one message of a call and return the responses written on its channel so far,
        decoded as the method's response type."""
        channel = channel or f"grpc:{next(self._channels)}"
        fields: dict[str, Any] = {"method": method}
        if client_id is not None:
            fields["client_id"] = client_id
        body = request if isinstance(request, bytes) else request.SerializeToString()
        mark = self.proxy.mark()
        self.proxy.deliver(Frame(code=EmulatorCode.GRPC, opaque=1, flag=Flag.REQUEST, fields=fields, body=body),
                           channel=channel, peer=peer, addr="127.0.0.1:55555")
        self.pump()
        self.check_encodable(mark)
        return self.responses(method, channel, mark)

    def check_encodable(self, since: int = 0) -> None:
        """Every frame the proxy sent and every line it wrote since ``since`` encodes, as the real
        runtime encodes them (a number past 64 bits does not, and killed the node there)."""
        for a in self.proxy.actions[since:]:
            if isinstance(a, (Request, Oneway, Reply)):
                encode(a.frame)
            elif isinstance(a, Emit):
                wire_json.dumps_line(a.fields)

    def responses(self, method: str, channel: str, since: int = 0) -> list[Any]:
        out = []
        for reply in self.proxy.replies(channel, since=since):
            msg = v2.RESPONSES[method]()
            msg.ParseFromString(reply.frame.body)
            out.append(msg)
        return out

    def ended(self, channel: str) -> bool:
        return any(r.frame.fields.get("end") for r in self.proxy.replies(channel))
