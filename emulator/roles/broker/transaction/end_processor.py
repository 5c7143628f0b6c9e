"""EndTransactionProcessor: END_TRANSACTION (37), a producer's commit or rollback of a half
(4.9.4 ``broker/.../processor/EndTransactionProcessor.java``; docs/rocketmq-model.md §9.3).

A slave answers SLAVE_NOT_AVAILABLE and does nothing. Type 0 (the producer's UNKNOW) and unknown
types get no answer at all. A commit or rollback finds the half by ``commitLogOffset`` and checks
it against the header (group, queue offset, commit-log offset), each mismatch a SYSTEM_ERROR with
4.9.4's remark. A commit then stores the message in its real topic (transaction type COMMIT, the
half's properties and body, not waiting for a slave) and, once stored, marks the half done; a
rollback only marks it done. Nothing looks for an earlier end: a second commit stores the message
again, as 4.9.4 does. Producers send END_TRANSACTION oneway, so the answer is dropped for them
(server_dispatch); a request that is not oneway gets it. Each end writes a ``tx.end`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.dledger_commit_log import OS_PAGECACHE_BUSY, SERVICE_NOT_AVAILABLE, UNKNOWN_ERROR
from rmqemu.emulator.roles.broker.ha import PUT_OK
from rmqemu.emulator.roles.broker.transaction.bridge import (
    COMMIT_TYPE,
    PGROUP,
    REAL_QID,
    REAL_TOPIC,
    ROLLBACK_TYPE,
    java_int,
    msg_id_of,
    reset_transaction,
)
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.server_dispatch import h_bool, h_int, h_str

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

ACTIONS = {COMMIT_TYPE: "commit", ROLLBACK_TYPE: "rollback"}
NOT_FOUND = "Find prepared transaction message failed"
# checkPrepareMessage on a message without PGROUP: pgroupRead.equals(...) on null, answered by
# processRequestCommand with RemotingHelper.exceptionSimpleDesc
NO_GROUP = ("java.lang.NullPointerException, org.apache.rocketmq.broker.processor.EndTransactionProcessor"
            ".checkPrepareMessage(EndTransactionProcessor.java:169)")
# sendFinalMessage's answers to a failed put
FINAL_PUT_ANSWERS = {
    SERVICE_NOT_AVAILABLE: (R.SERVICE_NOT_AVAILABLE, "Service not available now."),
    OS_PAGECACHE_BUSY: (R.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
    UNKNOWN_ERROR: (R.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


def number_format_remark(text: str | None) -> str:
    """``Integer.parseInt`` of ``REAL_QID`` failing in ``endMessageTransaction``."""
    if text is None:
        return "java.lang.NumberFormatException: null"
    return (f'java.lang.NumberFormatException: For input string: "{text}", '
            "java.lang.NumberFormatException.forInputString(NumberFormatException.java:65)")


class EndTransactionProcessor:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def end_transaction(self, msg: Inbound, now: Now) -> list[Action]:
        b, f = self.broker, msg.frame
        group = h_str(f, "producerGroup", required=True) or ""
        state_offset = h_int(f, "tranStateTableOffset", required=True)
        commit_log_offset = h_int(f, "commitLogOffset", required=True)
        kind = h_int(f, "commitOrRollback", required=True)
        header_msg_id = h_str(f, "msgId", required=True) or ""
        from_check = h_bool(f, "fromTransactionCheck")
        line: dict[str, Any] = {"msg_id": header_msg_id, "group": group, "broker": b.cfg.brokerName,
                                "action": ACTIONS.get(kind or 0, "none"), "from_check": from_check,
                                "offset": state_offset}

        def answer(code: int, result: str, remark: str | None = None, **extra: Any) -> list[Action]:
            event = Emit("tx.end", {**line, "result": result, "code": int(code), **extra,
                                    **({"error": remark} if remark and code != R.SUCCESS else {})})
            return [event, Reply(msg.channel, f.response(code, remark))]

        if b.is_slave:
            return answer(R.SLAVE_NOT_AVAILABLE, "slave")
        if kind not in ACTIONS:  # TRANSACTION_NOT_TYPE or unknown: logged, no response
            return [Emit("tx.end", {**line, "result": "ignored", "code": None})]
        half = b.store.look_message_by_offset(int(commit_log_offset or 0))
        if half is None:
            return answer(R.SYSTEM_ERROR, "not_found", NOT_FOUND)
        line["msg_id"] = msg_id_of(half)
        problem = self._check_prepare(half, group, state_offset, commit_log_offset)
        if problem is not None:
            return answer(R.SYSTEM_ERROR, "mismatch", problem)
        if kind == ROLLBACK_TYPE:
            return b.transactions.put_op(half, now) + answer(R.SUCCESS, "ok")
        return self._commit(half, answer, now)

    @staticmethod
    def _check_prepare(half: dict[str, Any], group: str, state_offset: int | None,
                       commit_log_offset: int | None) -> str | None:
        """``checkPrepareMessage``'s remark, or None when the half matches the header."""
        pgroup = half.get("properties", {}).get(PGROUP)
        if pgroup is None:
            return NO_GROUP
        if pgroup != group:
            return "The producer group wrong"
        if int(half["queueOffset"]) != state_offset:
            return "The transaction state table offset wrong"
        if int(half["commitLogOffset"]) != commit_log_offset:
            return "The commit log offset wrong"
        return None

    def _commit(self, half: dict[str, Any], answer: Any, now: Now) -> list[Action]:
        """``endMessageTransaction`` + ``sendFinalMessage``; the op mark once the message is stored."""
        b = self.broker
        props = dict(half.get("properties", {}))
        queue_id = java_int(props.get(REAL_QID))
        if queue_id is None:
            return answer(R.SYSTEM_ERROR, "put_failed", number_format_remark(props.get(REAL_QID)))
        topic = props.get(REAL_TOPIC) or ""
        record, actions = b.schedule.put(
            topic, queue_id, body_bytes(half), props, now, sys_flag=reset_transaction(int(half.get("sysFlag", 0)),
                                                                                      COMMIT_TYPE),
            born_timestamp=int(half.get("bornTimestamp", 0)), reconsume_times=int(half.get("reconsumeTimes", 0)),
            flag=int(half.get("flag", 0)), born_host=str(half.get("bornHost", "")))
        if record is None:
            code, remark = FINAL_PUT_ANSWERS[OS_PAGECACHE_BUSY]
            return actions + answer(code, "put_failed", remark)
        actions += b.puller.notify_message_arriving(record["topic"], record["queueId"], now) + b.ha.notify_new_data(now)
        where = {"queue_offset": int(record["queueOffset"]), "topic": topic, "queue_id": queue_id}

        def stored(status: str, n: Now) -> list[Action]:
            if status != PUT_OK:
                code, remark = FINAL_PUT_ANSWERS.get(status, (R.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
                return answer(code, "put_failed", remark)
            return b.transactions.put_op(half, n) + answer(R.SUCCESS, "ok", **where)

        if b.dledger is not None:  # DLedgerCommitLog.putMessage waits for the quorum
            b.dledger.await_ack(record, stored)
            return actions
        return actions + stored(PUT_OK, now)

