"""The DLedger RPCs between the peers of a group: their codes and the answers they carry.

DLedger speaks its own protocol on its own port (``DLedgerRpcNettyService``, JSON bodies); the
emulator has one data-plane address per node, so each RPC is a request with an emulator-internal
code (:class:`rmqemu.emulator.protocol.EmulatorCode`) whose header fields are the JSON request's,
and the answer's fields are DLedger's response, its ``code`` one of :class:`Code`.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Callable

from rmqemu.emulator.roles.common.base import Action, Now

ReplyCallback = Callable[[dict[str, Any] | None, Now], list[Action]]
Send = Callable[[str, int, dict[str, Any], ReplyCallback, Now], list[Action]]  # peer id, code, fields, callback


class Code(IntEnum):
    """``DLedgerResponseCode``: the ones the election, the pushes and appends answer with."""

    UNKNOWN = -1
    SUCCESS = 200
    NETWORK_ERROR = 302
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    UNEXPECTED_ARGUMENT = 411
    REPEATED_PUSH = 413
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    LEADER_TRANSFERRING = 506


class Vote:
    """``VoteResponse.RESULT`` names (strings on the wire, as DLedger's JSON has them)."""

    UNKNOWN = "UNKNOWN"
    ACCEPT = "ACCEPT"
    REJECT_UNKNOWN_LEADER = "REJECT_UNKNOWN_LEADER"
    REJECT_UNEXPECTED_LEADER = "REJECT_UNEXPECTED_LEADER"
    REJECT_EXPIRED_VOTE_TERM = "REJECT_EXPIRED_VOTE_TERM"
    REJECT_ALREADY_VOTED = "REJECT_ALREADY_VOTED"
    REJECT_ALREADY_HAS_LEADER = "REJECT_ALREADY_HAS_LEADER"
    REJECT_TERM_NOT_READY = "REJECT_TERM_NOT_READY"
    REJECT_TERM_SMALL_THAN_LEDGER = "REJECT_TERM_SMALL_THAN_LEDGER"
    REJECT_EXPIRED_LEDGER_TERM = "REJECT_EXPIRED_LEDGER_TERM"
    REJECT_SMALL_LEDGER_END_INDEX = "REJECT_SMALL_LEDGER_END_INDEX"
    REJECT_TAKING_LEADERSHIP = "REJECT_TAKING_LEADERSHIP"


class PushType:
    APPEND, COMPARE, TRUNCATE, COMMIT = "APPEND", "COMPARE", "TRUNCATE", "COMMIT"


def int_field(fields: dict[str, Any], key: str, default: int = -1) -> int:
    """An integer header field; ``ValueError`` naming it when it is something else."""
    value = fields.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key}: expected an integer, got {value!r:.40}") from None
    return value
