"""Where a master keeps its transactions: halves, their check copies, the op marks, the discards
(4.9.4 ``TransactionalMessageBridge``; docs/rocketmq-model.md §9.2).

A half is an ordinary message (transaction type reset to 0) in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0,
its real topic and queue in ``REAL_TOPIC`` / ``REAL_QID``; consumers never see that topic. A commit
or rollback appends an op mark to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` queue 0: tag ``d``, body the half's
queue offset as decimal text. The check service appends copies of a half (its count raised) to the
half queue, and gives one up into ``TRANS_CHECK_MAX_TIME_TOPIC``. All of it goes through the commit
log like any put, so it survives restarts and replicates to slaves (classic or DLedger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Perm
from rmqemu.emulator.roles.common.base import Action, Emit, Now
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.sysflag import (  # noqa: F401 - the broker's transaction room reads them here
    COMMIT_TYPE,
    HALF_TOPIC,
    NOT_TYPE,
    ROLLBACK_TYPE,
    is_half,
    reset_transaction,
)

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SYS_GROUP = "CID_RMQ_SYS_TRANS"  # MixAll.CID_SYS_RMQ_TRANS: owns the half and op queues' offsets
REMOVE_TAG = "d"
TRAN_MSG, PGROUP, REAL_TOPIC, REAL_QID = "TRAN_MSG", "PGROUP", "REAL_TOPIC", "REAL_QID"
CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"




def java_int(text: str | None) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong``: None where Java throws."""
    if text is None or not text.strip("+-").isdigit() or text.count("-") + text.count("+") > 1:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def msg_id_of(record: dict[str, Any]) -> str:
    return str(record.get("properties", {}).get("UNIQ_KEY") or record.get("offsetMsgId", ""))


class TransactionBridge:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    @staticmethod
    def queues() -> list[tuple[str, int]]:
        """The queues a restore reads whether or not the topics are in the table yet: halves are
        stored before the first check pass creates the half topic's config."""
        return [(HALF_TOPIC, 0), (OP_TOPIC, 0), (CHECK_MAX_TIME_TOPIC, 0)]

    def half_inner(self, topic: str, queue_id: int, props: dict[str, str],
                   sys_flag: int) -> tuple[str, int, dict[str, str], int]:
        """``parseHalfMessageInner``: the half's topic, queue, properties and sysFlag."""
        props = {**props, REAL_TOPIC: topic, REAL_QID: str(queue_id)}
        return HALF_TOPIC, 0, props, reset_transaction(sys_flag, NOT_TYPE)

    def half_event(self, record: dict[str, Any]) -> Emit:
        props = record["properties"]
        return Emit("tx.half", {
            "msg_id": msg_id_of(record), "group": props.get(PGROUP, ""), "broker": self.broker.cfg.brokerName,
            "topic": props.get(REAL_TOPIC, ""), "queue_id": java_int(props.get(REAL_QID)) or 0,
            "offset": int(record["queueOffset"]), "commit_log_offset": int(record["commitLogOffset"])})

    def select_topic_config(self, topic: str, now: Now) -> list[Action]:
        """``selectTopicConfig``: the topic's config, made on first use (1 queue, read and write),
        which registers the broker anew as any topic created on a send does."""
        b = self.broker
        _, actions, created = b.topics.create_in_send_message_back_method(
            topic, 1, Perm.READ | Perm.WRITE, 0, now.wall_ms)
        if created:
            actions += b.registrar.register_all(now, oneway_=True, force=True)
        return actions

    def _put(self, topic: str, record: dict[str, Any], props: dict[str, str], now: Now,
             body: Any = None, sys_flag: int | None = None) -> tuple[dict[str, Any] | None, list[Action]]:
        b = self.broker
        stored, actions, _ = b.put_record(
            topic, 0, body_bytes(record) if body is None else body, props, now,
            born_timestamp=int(record.get("bornTimestamp", 0)), reconsume_times=int(record.get("reconsumeTimes", 0)),
            flag=int(record.get("flag", 0)), sys_flag=int(record.get("sysFlag", 0)) if sys_flag is None else sys_flag,
            born_host=str(record.get("bornHost", "")))
        if stored is not None:
            actions += b.puller.notify_message_arriving(topic, 0, now) + b.ha.notify_new_data(now)
        return stored, actions

    def put_op(self, half: dict[str, Any], now: Now) -> list[Action]:
        """``deletePrepareMessage``: the op mark of a half's queue offset (its put failing is only logged)."""
        actions = self.select_topic_config(OP_TOPIC, now)
        _, acts = self._put(OP_TOPIC, {"bornHost": self.broker.store.store_host}, {"TAGS": REMOVE_TAG}, now,
                            body=str(int(half["queueOffset"])).encode(), sys_flag=0)
        return actions + acts

    def renew(self, half: dict[str, Any], props: dict[str, str],
              now: Now) -> tuple[dict[str, Any] | None, list[Action]]:
        """``renewHalfMessageInner`` + put: a copy of the half at the queue's end, with ``props``
        (its raised count); same body, born time and host, sysFlag."""
        return self._put(HALF_TOPIC, half, props, now, body=body_bytes(half))

    def discard(self, half: dict[str, Any], props: dict[str, str], now: Now) -> list[Action]:
        """``resolveDiscardMsg``: the half copied into ``TRANS_CHECK_MAX_TIME_TOPIC``, never delivered."""
        actions = self.select_topic_config(CHECK_MAX_TIME_TOPIC, now)
        _, acts = self._put(CHECK_MAX_TIME_TOPIC, half, props, now, body=body_bytes(half))
        return actions + acts
