"""Receives the client gave up on: their messages are handed back at once (docs/rocketmq-model.md
§10.1).

A POP answer can reach the proxy after the ReceiveMessage call is over on the client's side: a
gRPC call the client cancelled or let pass its deadline (grpc then ends it, and the transport
says ``closed``), or an emulated client's call past the ``timeout_ms`` it sent (its request
timeout plus the long-polling time, which a real client sends as the call's deadline). 5.x's
``ReceiveMessageResponseStreamWriter`` cannot write to such a call (``onNext`` throws) and changes
each popped message's invisible time to 1 s (``NACK_INVISIBLE_TIME``) instead, so the message is
handed out again within seconds rather than when its lease would have run out. Each nack is a
``proxy.nack`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode, is_grpc, request
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Request
from rmqemu.emulator.roles.common.pop_keys import real_topic
from rmqemu.emulator.roles.proxy.messages import Handle

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

NACK_INVISIBLE_MS = 1000
TIMEOUT_MS = 3000
Key = tuple[str, int]  # (channel, opaque): one call


def deadline_of(msg: Inbound, now: Now) -> float | None:
    """When the call is over for its client (mono ms), from the ``timeout_ms`` an emulated client
    sends; None for a gRPC call (its end comes as the channel's ``closed``) or no usable value."""
    raw = msg.frame.fields.get("timeout_ms")
    if is_grpc(msg.channel) or isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw >= 0:
        return None
    return now.mono_ms + float(raw)


class Abandoned:
    """The receives waiting for their POP answer, and which of them the client left."""

    def __init__(self, proxy: "Proxy") -> None:
        self.proxy = proxy
        self.waiting: dict[Key, float | None] = {}  # -> the client's deadline (mono ms), if it sent one
        self.left: set[Key] = set()  # gRPC calls that ended while their POP was out

    def expect(self, msg: Inbound, deadline: float | None) -> None:
        """A POP goes out for this call, whose client leaves it at ``deadline`` (:func:`deadline_of`
        when the call arrived)."""
        self.waiting[(msg.channel, msg.frame.opaque)] = deadline

    def closed(self, channel: str) -> None:
        """The gRPC call on ``channel`` ended on the client's side."""
        self.left.update(k for k in self.waiting if k[0] == channel)

    def settle(self, msg: Inbound, now: Now) -> bool:
        """The POP's answer came: whether the client has left the call (then nack what it gave)."""
        key = (msg.channel, msg.frame.opaque)
        deadline = self.waiting.pop(key, None)
        gone = key in self.left
        self.left.discard(key)
        return gone or (deadline is not None and now.mono_ms > deadline)

    def nack(self, msg: Inbound, group: str, topic: str, addr: str, records: list[dict[str, Any]]) -> list[Action]:
        """CHANGE_INVISIBLE_TIME to 1 s for each popped record, to the broker that leased it."""
        actions: list[Action] = []
        for record in records:
            props = record.get("properties") or {}
            handle = Handle.decode(f"{props.get('POP_CK', '')} {int(record.get('commitLogOffset', -1))}")
            if handle is None:
                continue
            msg_id = str(props.get("UNIQ_KEY") or record.get("msgId", ""))
            fields = {"consumerGroup": group, "topic": real_topic(topic, group, handle.topic_type),
                      "queueId": handle.queue_id, "extraInfo": handle.text, "offset": handle.offset,
                      "invisibleTime": NACK_INVISIBLE_MS}

            def done(resp: Any, now: Now, msg_id: str = msg_id, broker: str = handle.broker) -> list[Action]:
                result = "timeout" if resp is None else "ok" if resp.code == ResponseCode.SUCCESS \
                    else f"code_{resp.code}"
                return [Emit("proxy.nack", {"group": group, "topic": topic, "msg_id": msg_id, "broker": broker,
                                            "result": result, "proxy": self.proxy.name}, node=msg.peer)]

            actions.append(Request(addr, request(RC.CHANGE_INVISIBLE_TIME, fields), TIMEOUT_MS, done))
        return actions
