"""The transaction part of a message, as both a producer and a broker read it
(docs/rocketmq-model.md §9): ``MessageSysFlag``'s transaction types, the ``TRAN_MSG`` property
that makes a send a half, and the topic halves are kept in."""

from __future__ import annotations

# MessageSysFlag's transaction types (bits 2-3)
TRANSACTION_MASK, NOT_TYPE, PREPARED_TYPE, COMMIT_TYPE, ROLLBACK_TYPE = 0x0C, 0x00, 0x04, 0x08, 0x0C
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"


def is_half(props: dict[str, str]) -> bool:
    """``Boolean.parseBoolean(TRAN_MSG)``: a half is told by this property, not by the sysFlag (the
    client sets ``PREPARED_TYPE`` by it, the broker branches on it)."""
    return props.get("TRAN_MSG", "").lower() == "true"


def reset_transaction(sys_flag: int, kind: int) -> int:
    """``MessageSysFlag.resetTransactionValue``."""
    return (sys_flag & ~TRANSACTION_MASK) | kind
