"""Builders shared by the POP tests (not a test module): the proxy's side of POP_MESSAGE,
ACK_MESSAGE and CHANGE_INVISIBLE_TIME against a broker driven over the fake clock."""

from __future__ import annotations

from typing import Any

from rmqemu.emulator.protocol import Frame
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import send
from tests.roles.fakes import Driver

GROUP, TOPIC = "cg", "T"
REVIVE = keys.revive_topic("DefaultCluster")
RETRY = keys.retry_topic(TOPIC, GROUP)
CH = "proxy-ch"


def create_topic(d: Driver, topic: str = TOPIC, queues: int = 1) -> None:
    resp = d.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": queues, "writeQueueNums": queues,
                                                "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0,
                                                "order": False, "defaultTopic": "TBW102"})
    assert resp is not None and resp.code == 0, resp


def put(d: Driver, uniq: str, body: str | bytes = "b", queue_id: int = 0, topic: str = TOPIC,
        props: dict[str, str] | None = None) -> Frame:
    text = body if isinstance(body, str) else body.decode("latin-1")
    resp, _ = send(d, topic, text, queue_id, props={"UNIQ_KEY": uniq, **(props or {})})
    assert resp is not None and resp.code == 0, resp
    return resp


def pop_frame(d: Driver, *, queue_id: int = -1, max_nums: int = 32, invisible: int = 30000, poll: int = 0,
              order: bool = False, group: str = GROUP, topic: str = TOPIC, attempt_id: str | None = None,
              channel: str = CH, **extra: Any) -> tuple[Frame | None, list]:
    header: dict[str, Any] = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "maxMsgNums": max_nums,
                              "invisibleTime": invisible, "pollTime": poll, "bornTime": int(d.now().wall_ms),
                              "initMode": 1, "expType": "TAG", "exp": "*", "order": order, **extra}
    if attempt_id is not None:
        header["attemptId"] = attempt_id
    return d.send(RC.POP_MESSAGE, header, channel=channel, peer="proxy-0")


def pop(d: Driver, **kw: Any) -> tuple[Frame, list[dict[str, Any]]]:
    """A POP answered at once: the response and its messages (the JSON list a pull returns)."""
    resp, _ = pop_frame(d, **kw)
    assert resp is not None
    return resp, (resp.json_body() or []) if resp.code == 0 else []


def handle(m: dict[str, Any]) -> tuple[str, str, int, int]:
    """What the proxy keeps of a popped message to ack it: (extraInfo, real topic, queue, offset)."""
    ck = m["properties"][keys.POP_CK]
    parts = ck.split(" ")
    return ck, keys.real_topic(m["topic"], GROUP, parts[4]), int(parts[6]), int(parts[7])


def ack(d: Driver, m: dict[str, Any], group: str = GROUP, **override: Any) -> Frame:
    extra, topic, queue_id, offset = handle(m)
    header = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "extraInfo": extra, "offset": offset,
              **override}
    resp = d.call(RC.ACK_MESSAGE, header, channel=CH, peer="proxy-0")
    assert resp is not None
    return resp


def change_invisible(d: Driver, m: dict[str, Any], invisible: int, **override: Any) -> Frame:
    extra, topic, queue_id, offset = handle(m)
    header = {"consumerGroup": GROUP, "topic": topic, "queueId": queue_id, "extraInfo": extra, "offset": offset,
              "invisibleTime": invisible, **override}
    resp = d.call(RC.CHANGE_INVISIBLE_TIME, header, channel=CH, peer="proxy-0")
    assert resp is not None
    return resp


def renewed(m: dict[str, Any], resp: Frame) -> dict[str, Any]:
    """The message with the new handle a renewal answers: the proxy's ReceiptHandle rebuilt."""
    parts = m["properties"][keys.POP_CK].split(" ")
    parts[0] = parts[7]  # the new checkpoint starts at the message itself
    parts[1], parts[2], parts[3] = str(resp.fields["popTime"]), str(resp.fields["invisibleTime"]), \
        str(resp.fields["reviveQid"])
    return {**m, "properties": {**m["properties"], keys.POP_CK: " ".join(parts)}}


def uniq(m: dict[str, Any]) -> str:
    return str(m["properties"].get("UNIQ_KEY"))


def body_of(m: dict[str, Any]) -> bytes:
    return body_bytes(m)
