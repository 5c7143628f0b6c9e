"""The event kinds of transactional messages (a section of the registry, :mod:`rmqemu.event_kinds`
lists it in ``SECTIONS``): a half's life from end to end, joined by ``msg_id`` (the UNIQ_KEY, which
the half, its check copies and the committed message all keep).

The producer's ``send`` line of a half carries ``transaction`` = ``half``. The master that stored
it writes ``tx.half``; then ``tx.local`` (an emulated producer decided: its local transaction, or
its answer to a check) and ``tx.end`` (the master handled END_TRANSACTION: a commit makes the
message visible in its real topic, where ``consume`` lines then name it), or ``tx.check`` (the
check service asked a producer of the group, docs/rocketmq-model.md §9) until an end arrives or
``tx.discard`` gives the half up. 4.9.4's commit is not idempotent: two ``tx.end`` lines that
committed the same ``msg_id`` store the message twice.
"""

from __future__ import annotations

from rmqemu.event_types import BOOL, FLOAT, INT, LONG, STR, Field, Kind, Section

_HALF = (
    Field("msg_id", STR, "the UNIQ_KEY (the half's offsetMsgId when it has none)", required=True),
    Field("group", STR, "the producer group (`PGROUP`)", required=True),
    Field("broker", STR, "broker name", required=True),
)

#: Added to ``send`` and ``send.fail``: a transactional producer's half message.
SEND_FIELDS = (
    Field("transaction", STR, "`half`: a transactional producer's half message (`TRAN_MSG`), invisible until "
          "committed (see `tx.half`)", ext=True),
)

TRANSACTIONS = Section("Transactional messages", (
    Kind("tx.half", "broker (master)", "a half message was stored in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0, "
         "invisible to consumers; a check copy (`tx.check`) is not a new half", _HALF + (
             Field("topic", STR, "the real topic (`REAL_TOPIC`): where a commit makes it visible", required=True),
             Field("queue_id", INT, "the real queue (`REAL_QID`)", required=True),
             Field("offset", LONG, "its offset in the half queue (`tranStateTableOffset` of its end)",
                   required=True),
             Field("commit_log_offset", LONG, "its commit-log offset (the end's `commitLogOffset`)", required=True),
         )),
    Kind("tx.end", "broker (master); also a slave, which refuses it", "END_TRANSACTION (37) was handled: a "
         "producer's end after its local transaction, or its answer to a check (`from_check`)", _HALF + (
             Field("action", STR, "`commit`, `rollback` or `none` (type 0: the producer's UNKNOW, ignored)",
                   required=True),
             Field("from_check", BOOL, "the end answers a check (`fromTransactionCheck`, as the producer says)",
                   required=True),
             Field("result", STR, "`ok` (committed: the message stored in its real topic, or rolled back: the "
                   "half marked done), `ignored` (type 0), `not_found` (no half at `commitLogOffset`), "
                   "`mismatch` (the group, queue offset or commit-log offset differ from the half's), "
                   "`slave` (SLAVE_NOT_AVAILABLE), `put_failed` (the commit's put failed)", required=True),
             Field("code", INT, "the response code the end was answered with (a oneway end never reads it), "
                   "null when none is written", required=True, nullable=True),
             Field("offset", LONG, "the end's `tranStateTableOffset`", required=True, nullable=True),
             Field("queue_offset", LONG, "a commit: the message's offset in its real queue", nullable=True),
             Field("topic", STR, "a commit: the real topic", nullable=True),
             Field("queue_id", INT, "a commit: the real queue", nullable=True),
             Field("error", STR, "the remark of a refused end"),
         )),
    Kind("tx.check", "broker (master)", "the check service put a half back (a copy, its count raised) and sent "
         "CHECK_TRANSACTION_STATE (39) to a producer channel of the group, or to none", _HALF + (
             Field("check_times", INT, "`TRANSACTION_CHECK_TIMES` of the copy: 1 for the first check",
                   required=True),
             Field("offset", LONG, "the copy's offset in the half queue (what the answer's end names)",
                   required=True),
             Field("client_id", STR, "the producer asked, or null: no live channel of the group (\"Check transaction "
                   "failed, channel is null\")", required=True, nullable=True),
             Field("age_ms", FLOAT, "cluster ms from the half's birth (the producer's clock) to the check",
                   required=True),
         )),
    Kind("tx.discard", "broker (master)", "a half given up: checked `transactionCheckMax` times (copied to "
         "`TRANS_CHECK_MAX_TIME_TOPIC`, never delivered) or older than `fileReservedTime`", _HALF + (
             Field("check_times", INT, "the checks it had", required=True),
             Field("reason", STR, "`max_checks` or `expired`", required=True),
         )),
    Kind("tx.local", "producer", "a transactional producer decided a half's state: its local transaction after "
         "the half's SEND_OK, or its answer to a check; an END_TRANSACTION carrying it went to the master "
         "(oneway), unless `sent` is false", (
             Field("msg_id", STR, "the UNIQ_KEY", required=True),
             Field("group", STR, required=True),
             Field("topic", STR, required=True),
             Field("broker", STR, "the broker the half went to (for a check's answer: the name the producer's route "
                   "gives the checking address, else that node's name)", required=True),
             Field("state", STR, "`COMMIT_MESSAGE`, `ROLLBACK_MESSAGE` or `UNKNOW`", required=True),
             Field("from_check", BOOL, "an answer to a check", required=True),
             Field("check_times", INT, "the check's `TRANSACTION_CHECK_TIMES`", nullable=True),
             Field("sent", BOOL, "false: no address for the end (no master in the route)", required=True),
             Field("addr", STR, "where the end went: the master's address, or the checking broker's",
                   nullable=True),
         )),
))
