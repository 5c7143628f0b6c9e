"""Messages to a consumer group's DLQ through the proxy (docs/rocketmq-model.md §10.1).

5.x's proxy moves a message to ``%DLQ%<group>`` in two cases, both as
``ProducerProcessor.forwardMessageToDeadLetterQueue`` does: CONSUMER_SEND_MSG_BACK naming the
message's commit-log offset with ``maxReconsumeTimes`` 0, then, once the broker stored the copy,
an ACK_MESSAGE of the lease. A PushConsumer in FIFO mode asks for it
(ForwardMessageToDeadLetterQueue) when a message used up its attempts; and a receive drops a
popped message past the client's max attempts that way (``PopMessageResultFilterImpl``'s TO_DLQ)
instead of delivering it. A send-back that fails acks nothing: the lease runs out and the message
comes back, as in 5.x. Each try is a ``proxy.dlq`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode, request
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply, Request
from rmqemu.emulator.roles.common.pop_keys import real_topic
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.messages import Handle

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

TIMEOUT_MS = 3000
Done = Callable[[Any, Now], list[Action]]  # the send-back's answer (None: none came)


def send_to_dlq(proxy: "Proxy", peer: str, addr: str, group: str, topic: str, handle: Handle, msg_id: str,
                attempt: int, then: Done = lambda resp, now: []) -> list[Action]:
    """CONSUMER_SEND_MSG_BACK to ``addr`` (the handle's broker), then the lease's ACK when it was stored."""
    origin = real_topic(topic, group, handle.topic_type)
    back = {"offset": handle.commit_log_offset, "group": group, "delayLevel": -1, "originMsgId": msg_id,
            "originTopic": origin, "maxReconsumeTimes": 0}

    def sent_back(resp: Any, now: Now) -> list[Action]:
        ok = resp is not None and resp.code == ResponseCode.SUCCESS
        line = Emit("proxy.dlq", {"group": group, "topic": topic, "msg_id": msg_id, "broker": handle.broker,
                                  "attempt": attempt, "proxy": proxy.name,
                                  "result": "ok" if ok else ("timeout" if resp is None else f"code_{resp.code}")},
                    node=peer)
        out: list[Action] = [line]
        if ok:
            ack = {"consumerGroup": group, "topic": origin, "queueId": handle.queue_id, "extraInfo": handle.text,
                   "offset": handle.offset}
            out.append(Request(addr, request(RC.ACK_MESSAGE, ack), TIMEOUT_MS, lambda r, n: []))
        return out + then(resp, now)

    return [Request(addr, request(RC.CONSUMER_SEND_MSG_BACK, back), TIMEOUT_MS, sent_back)]


def forward_to_dlq(proxy: "Proxy", msg: Inbound, req: pb.ForwardMessageToDeadLetterQueueRequest,
                   now: Now) -> list[Action]:
    """The ForwardMessageToDeadLetterQueue RPC: the status is the send-back's answer."""
    def reply(code: int, text: str) -> list[Action]:
        answer = pb.ForwardMessageToDeadLetterQueueResponse(status=v2.status(code, text))
        return [Reply(msg.channel, v2.answer(msg.frame, answer))]

    handle = Handle.decode(proxy.renewal.take(msg.frame.fields.get("client_id"), req.group.name, req.message_id,
                                              req.receipt_handle))
    if handle is None or handle.commit_log_offset < 0:
        return reply(v2.Code.INVALID_RECEIPT_HANDLE, "receipt handle is invalid")
    view = proxy.routes.cached(req.topic.name)
    addr = view.masters.get(handle.broker) if view is not None else None
    if addr is None:
        return reply(v2.Code.INTERNAL_SERVER_ERROR, f"no master of {handle.broker}")

    def answered(resp: Any, rnow: Now) -> list[Action]:
        if resp is None:
            return reply(v2.Code.PROXY_TIMEOUT, "send back timed out")
        if resp.code == ResponseCode.SUCCESS:
            return reply(v2.Code.OK, "OK")
        return reply(v2.Code.INTERNAL_SERVER_ERROR, resp.remark or f"code {resp.code}")

    return send_to_dlq(proxy, msg.peer, addr, req.group.name, req.topic.name, handle, req.message_id,
                       req.delivery_attempt, answered)
