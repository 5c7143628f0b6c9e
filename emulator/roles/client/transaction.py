"""A transactional producer's two halves of 4.9.4's protocol (docs/rocketmq-model.md §9.1).

``DefaultMQProducerImpl.sendMessageInTransaction``: the message goes as a *half* (``TRAN_MSG`` and
``PGROUP`` set, ``DELAY`` dropped; the send flow marks its sysFlag) through an ordinary sync send;
on SEND_OK the local transaction runs (an outcome drawn, ``local_ms`` on a timer), on
FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE the half is rolled back without
one, and a failed send ends nothing. The end is END_TRANSACTION, **oneway**, to the master of the
broker the half went to, looked up when the end is sent.

``ClientRemotingProcessor.checkTransactionState``: a broker pushes CHECK_TRANSACTION_STATE on the
producer's channel; the producer of the body's ``PGROUP`` answers on its check executor (one
thread, 2000 waiting at most: ``check_ms`` each, in turn) with END_TRANSACTION, oneway, to the
checking broker, the check header's offsets and ``transactionId`` copied. Every decision is a
``tx.local`` event.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from rmqemu.emulator.protocol import BadFrame, Frame, RequestCode, oneway
from rmqemu.emulator.roles.client.client_instance import ClientInstance
from rmqemu.emulator.roles.client.send_flow import SendJob
from rmqemu.emulator.roles.client.transaction_workload import STATES, TransactionWorkload
from rmqemu.emulator.roles.client.workload import OutgoingMessage
from rmqemu.emulator.roles.common.base import Action, After, Emit, Inbound, Log, Oneway
from rmqemu.emulator.roles.common.server_dispatch import HeaderError, h_int, h_str, parse_properties
from rmqemu.emulator.roles.common.sysflag import HALF_TOPIC

#: EndTransactionRequestHeader.commitOrRollback: MessageSysFlag's COMMIT, ROLLBACK and NOT types.
COMMIT_OR_ROLLBACK = {STATES["commit"]: 8, STATES["rollback"]: 12, STATES["unknown"]: 0}
NOT_OK_STORED = frozenset({10, 11, 12})  # FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT
CHECK_QUEUE_MAX = 2000  # initTransactionEnv: ThreadPoolExecutor(1, 1, ..., LinkedBlockingQueue(2000))
CHECK_TIMER = "txCheck"
LOCAL_TIMER = "txLocal-"  # + a sequence number: one timer per local transaction in progress


def decode_commit_log_offset(msg_id: str) -> int | None:
    """``MessageDecoder.decodeMessageId(id).getOffset()``: 32 hex chars are a 4-byte IP, else a
    16-byte one, then a 4-byte port and the 8-byte (signed) offset; None when it does not decode."""
    ip_len = 8 if len(msg_id) == 32 else 32
    raw = msg_id[ip_len + 8:ip_len + 24]
    try:
        return int.from_bytes(bytes.fromhex(raw), "big", signed=True) if len(raw) == 16 else None
    except ValueError:
        return None


def end_frame(group: str, tran_offset: int, commit_log_offset: int, state: str, msg_id: str,
              from_check: bool, transaction_id: str | None = None) -> Frame:
    """END_TRANSACTION with 4.9.4's EndTransactionRequestHeader; a null ``transactionId`` is left
    out, as RocketMQ's header encoding leaves out every null field."""
    fields: dict[str, Any] = {"producerGroup": group, "tranStateTableOffset": tran_offset,
                              "commitLogOffset": commit_log_offset, "commitOrRollback": COMMIT_OR_ROLLBACK[state],
                              "fromTransactionCheck": from_check, "msgId": msg_id}
    if transaction_id is not None:
        fields["transactionId"] = transaction_id
    return oneway(RequestCode.END_TRANSACTION, fields)


@dataclass
class _End:
    """A half whose state is (being) decided and the end that will name it."""

    msg_id: str
    topic: str
    broker: str
    tran_offset: int
    commit_log_offset: int | None  # None: the send result's offsetMsgId did not decode
    state: str = STATES["unknown"]
    from_check: bool = False
    check_times: int | None = None
    addr: str | None = None  # a check's: the checking broker; the first phase looks the master up
    transaction_id: str | None = None


class TransactionFlow:
    """The transactional half of one producer: its local transactions and its check executor."""

    def __init__(self, group: str, instance: ClientInstance, workload: TransactionWorkload, seed: int,
                 name: str) -> None:
        self.group = group
        self.instance = instance
        self.workload = workload
        self.local_rng = random.Random(f"{seed}:{name}:tx-local")
        self.check_rng = random.Random(f"{seed}:{name}:tx-check")
        self.locals: dict[str, _End] = {}  # timer name -> a half whose local transaction is running
        self.checks: deque[_End] = deque()  # the check executor: the head is running
        self.seq = 0
        self.counts = {"tx_local": 0, "tx_checks": 0, "tx_ends": 0}
        self.dropped: dict[str, int] = {}  # checks not answered, by why

    @property
    def busy(self) -> bool:
        """A local transaction is running: sendMessageInTransaction has not returned yet."""
        return bool(self.locals)

    def half(self, msg: OutgoingMessage) -> tuple[OutgoingMessage, str]:
        """The half of ``msg`` and its local transaction's outcome, drawn now (one draw per message)."""
        props = {k: v for k, v in msg.properties.items() if k != "DELAY"}  # "ignore DelayTimeLevel parameter"
        props.update({"TRAN_MSG": "true", "PGROUP": self.group})
        return OutgoingMessage(msg.topic, msg.body, props), self.workload.local.draw(self.local_rng)

    # ------------------------------------------------------------------ the first phase

    def after_send(self, job: SendJob, ok: bool, state: str) -> list[Action]:
        """The half's send finished: run its local transaction, or roll it back, or end nothing."""
        if not ok or job.result is None:  # "send message Exception": no local transaction, no end
            return []
        mq, resp = job.result
        msg = job.msgs[0]
        try:
            tran_offset = h_int(resp, "queueOffset", required=True)
        except HeaderError as exc:
            return [Log(f"transaction {msg.msg_id}: the send result does not decode ({exc}); no end")]
        assert tran_offset is not None
        offset_id = h_str(resp, "msgId") or msg.msg_id  # offsetMsgId, else the msgId
        end = _End(msg.msg_id, msg.topic, mq.broker_name, tran_offset, decode_commit_log_offset(offset_id))
        if resp.code in NOT_OK_STORED:  # rolled back without running the local transaction
            end.state = STATES["rollback"]
            return self._end(end)
        end.state = state
        if self.workload.local_ms <= 0:
            return self._end(end)
        self.seq += 1
        name = f"{LOCAL_TIMER}{self.seq}"
        self.locals[name] = end
        return [After(name, self.workload.local_ms)]

    def on_timer(self, name: str) -> list[Action]:
        if name == CHECK_TIMER:
            return self._answer_next()
        end = self.locals.pop(name, None)
        return self._end(end) if end is not None else []

    # ------------------------------------------------------------------ checks

    def on_check(self, msg: Inbound) -> list[Action]:
        """CHECK_TRANSACTION_STATE (39), oneway: queue it on the check executor; nothing answers
        the check itself."""
        f = msg.frame
        try:
            clo, tso = h_int(f, "commitLogOffset", required=True), h_int(f, "tranStateTableOffset", required=True)
            record = f.json_body()
            props = parse_properties(record.get("properties")) if isinstance(record, dict) else None
        except (HeaderError, BadFrame, ValueError) as exc:
            return self._dropped("undecodable", f"checkTransactionState from {msg.peer}: does not decode ({exc})")
        if props is None:
            return self._dropped("undecodable", f"checkTransactionState from {msg.peer}: decode message failed")
        group = props.get("PGROUP")
        if group != self.group:
            return self._dropped("other_group", f"checkTransactionState from {msg.peer}: pick producer by "
                                                f"group[{group}] failed")
        assert clo is not None and tso is not None and isinstance(record, dict)
        self.counts["tx_checks"] += 1
        uniq = props.get("UNIQ_KEY") or _text(record.get("offsetMsgId")) or h_str(f, "offsetMsgId") or ""
        topic = _text(record.get("topic"))
        if topic in ("", HALF_TOPIC):  # the broker resets it to REAL_TOPIC; be lenient with one that did not
            topic = props.get("REAL_TOPIC", topic)
        end = _End(uniq, topic, self._broker_of(msg), tso, clo, from_check=True, addr=msg.addr,
                   check_times=_count(props.get("TRANSACTION_CHECK_TIMES")), transaction_id=h_str(f, "transactionId"))
        if len(self.checks) > CHECK_QUEUE_MAX:  # one running, 2000 waiting: RejectedExecutionException
            return self._dropped("queue_full", f"checkTransactionState {uniq}: the check executor's queue is full")
        self.checks.append(end)
        if self.workload.check_ms <= 0:
            return self._answer_next()
        return [After(CHECK_TIMER, self.workload.check_ms)] if len(self.checks) == 1 else []

    def _answer_next(self) -> list[Action]:
        if not self.checks:
            return []
        end = self.checks.popleft()
        end.state = self.workload.check.draw(self.check_rng)
        actions = self._end(end)
        if self.checks:  # the executor's thread takes the next one
            actions.append(After(CHECK_TIMER, self.workload.check_ms))
        return actions

    def _dropped(self, kind: str, text: str) -> list[Action]:
        """A check that gets no answer: counted by kind (``state()``); the first of a kind is
        logged, since a broker asks again on every pass of its check service."""
        self.dropped[kind] = self.dropped.get(kind, 0) + 1
        return [Log(f"{text}; not answered (later ones of this kind are only counted)")] \
            if self.dropped[kind] == 1 else []

    def _broker_of(self, msg: Inbound) -> str:
        """The broker name of the checking address, from the route's address table; the node's
        name when no route names it."""
        for name, addrs in self.instance.broker_addr_table.items():
            if msg.addr in addrs.values():
                return name
        return msg.peer

    # ------------------------------------------------------------------ the end

    def _end(self, end: _End) -> list[Action]:
        """``endTransaction`` / ``processTransactionState``: the decision's event and, when there
        is an address and an offset, the oneway END_TRANSACTION."""
        addr = end.addr if end.from_check else self.instance.find_broker_address_in_publish(end.broker)
        sent = addr is not None and end.commit_log_offset is not None
        self.counts["tx_local"] += 1
        ev = Emit("tx.local", {"msg_id": end.msg_id, "group": self.group, "topic": end.topic, "broker": end.broker,
                               "state": end.state, "from_check": end.from_check, "check_times": end.check_times,
                               "sent": sent, "addr": addr if sent else None})
        if not sent:
            why = ("the send result's offsetMsgId does not decode" if addr is not None
                   else "no address of the checking broker" if end.from_check else "no master address")
            return [ev, Log(f"endTransaction {end.msg_id} to {end.broker}: not sent, {why}")]
        assert addr is not None and end.commit_log_offset is not None
        self.counts["tx_ends"] += 1
        frame = end_frame(self.group, end.tran_offset, end.commit_log_offset, end.state, end.msg_id,
                          end.from_check, end.transaction_id)
        return [Oneway(addr, frame), ev]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: str | None) -> int | None:
    """``TRANSACTION_CHECK_TIMES`` as a number, or None when absent or not a count."""
    try:
        n = int(value) if value is not None else None
    except ValueError:
        return None
    return n if n is not None and 0 <= n < 2**31 else None
