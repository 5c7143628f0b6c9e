"""Builders for the broker's transaction tests (not a test module): a half sent, END_TRANSACTION
for it, a producer's heartbeat, the CHECK_TRANSACTION_STATE requests a master pushed."""

from __future__ import annotations

from typing import Any

from rmqemu.emulator.protocol import Frame
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common.base import Reply
from tests.roles.fakes import Driver

HALF, OP = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
COMMIT, ROLLBACK, UNKNOWN = 8, 12, 0


def half(d: Driver, uniq: str, topic: str = "A", queue_id: int = 2, group: str = "pg",
         body: str | bytes = "hello", channel: str = "prod-ch", born: float | None = None, sys_flag: int = 4,
         **props: str) -> Frame:
    """A producer's half: ``TRAN_MSG`` and ``PGROUP``, sysFlag 4 (plus 1 for a deflated body), as
    sendMessageInTransaction sends it; born by the broker's clock unless ``born`` gives the producer's."""
    born_ms = int(d.now().wall_ms if born is None else born)
    header = {"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": queue_id, "sysFlag": sys_flag, "bornTimestamp": born_ms, "flag": 0,
              "properties": {"UNIQ_KEY": uniq, "TRAN_MSG": "true", "PGROUP": group, **props},
              "reconsumeTimes": 0, "unitMode": False, "batch": False}
    resp = d.call(RC.SEND_MESSAGE_V2, header, body.encode() if isinstance(body, str) else body,
                  channel=channel, peer=group)
    assert resp is not None
    return resp


def offsets_of(resp: Frame) -> tuple[int, int]:
    """(tranStateTableOffset, commitLogOffset) the producer names its end with: the send result's
    queue offset, and the offset inside its offsetMsgId (the last 8 bytes)."""
    return int(resp.fields["queueOffset"]), int(str(resp.fields["msgId"])[-16:], 16)


def end(d: Driver, resp_or_offsets: Frame | tuple[int, int], kind: int, uniq: str, group: str = "pg",
        from_check: bool = False, oneway: bool = True, channel: str = "prod-ch", **override: Any) -> Frame | None:
    """END_TRANSACTION naming a half by its send answer (or explicit offsets)."""
    state, commit_log = offsets_of(resp_or_offsets) if isinstance(resp_or_offsets, Frame) else resp_or_offsets
    fields = {"producerGroup": group, "tranStateTableOffset": state, "commitLogOffset": commit_log,
              "commitOrRollback": kind, "msgId": uniq, "fromTransactionCheck": from_check, **override}
    return d.send(RC.END_TRANSACTION, {k: v for k, v in fields.items() if v is not None}, channel=channel,
                  peer=group, oneway=oneway)[0]


def producer_heartbeat(d: Driver, client_id: str, group: str = "pg", channel: str = "prod-ch") -> None:
    body = {"clientID": client_id, "producerDataSet": [{"groupName": group}], "consumerDataSet": []}
    d.send(RC.HEART_BEAT, {}, body, channel=channel, peer=client_id)


def checks(d: Driver, since: int = 0) -> list[Reply]:
    """The CHECK_TRANSACTION_STATE requests pushed on producers' channels."""
    return [r for r in d.replies(since=since) if r.frame.code == RC.CHECK_TRANSACTION_STATE]


def stored(d: Driver, topic: str, queue_id: int = 0) -> list[dict[str, Any]]:
    return d.role.store.queues.get((topic, queue_id), [])
