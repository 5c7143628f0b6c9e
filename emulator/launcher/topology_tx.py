"""The topology's ``transaction:`` key of a producer entry: transactional producers
(docs/rocketmq-model.md §9.1).

``transaction: true`` (every local transaction and every check answer commits at once) or a
mapping ``{local, check, local_duration, check_duration}`` makes each instance of the group a
``TransactionMQProducer``: every message is sent with ``sendMessageInTransaction``. ``local`` and
``check`` are shares of the outcomes ``commit``, ``rollback`` and ``unknown`` (a missing one is 0,
they add up to 1; the rule is :func:`emulator.roles.client.transaction_workload.shares_problem`,
which the node checks too); the durations are cluster time, like every duration of a topology.
The model and its checks against the rest of the entry live here; :mod:`emulator.launcher.topology`
holds the key.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from rmqemu.emulator.launcher.fault_spec import parse_duration
from rmqemu.emulator.launcher.topology_remoting import boolean_too, switch
from rmqemu.emulator.roles.client.transaction_workload import MAX_MS, shares_problem, transaction_problem

TRANSACTION_DESCRIPTION = (
    "transactional sends (TransactionMQProducer.sendMessageInTransaction): each message is a half message, "
    "invisible until its local transaction's outcome, drawn from `local`, commits it with END_TRANSACTION; "
    "the producer answers the broker's checks with outcomes drawn from `check`. true for all-commit, or "
    "{local, check, local_duration, check_duration}; needs mode sync, batch 1, no ordered; a delay_level is "
    "dropped, as the Java client drops it (docs/rocketmq-model.md §9.1)")


class Shares(BaseModel):
    """How often each ``LocalTransactionState`` comes out: shares from 0 to 1 that add up to 1."""

    model_config = ConfigDict(extra="forbid")

    commit: float = Field(0.0, ge=0, le=1, description="share of COMMIT_MESSAGE: the message becomes visible")
    rollback: float = Field(0.0, ge=0, le=1, description="share of ROLLBACK_MESSAGE: the half is dropped")
    unknown: float = Field(0.0, ge=0, le=1, description="share of UNKNOW: nothing is decided, the broker checks "
                                                        "the half later")

    @model_validator(mode="before")
    @classmethod
    def _shares(cls, v: Any) -> Any:
        problem = shares_problem(v)
        if problem:
            raise ValueError(problem)
        return v


def _all_commit() -> Shares:
    return Shares(commit=1.0)


class Transaction(BaseModel):
    """What a transactional producer's local transactions and check answers say, and how long they take."""

    model_config = ConfigDict(extra="forbid")

    local: Shares = Field(default_factory=_all_commit, description=(
        "outcomes of the local transaction run after a half's SEND_OK, e.g. {commit: 0.7, rollback: 0.1, "
        "unknown: 0.2}; default all commit"))
    check: Shares = Field(default_factory=_all_commit, description=(
        "outcomes of the answers to the broker's CHECK_TRANSACTION_STATE; default all commit"))
    local_duration: float = Field(0.0, ge=0, le=MAX_MS / 1000, description=(
        "cluster time a local transaction takes before its end is sent ('50ms', '2s' or seconds); the sending "
        "thread waits for it"))
    check_duration: float = Field(0.0, ge=0, le=MAX_MS / 1000, description=(
        "cluster time a check takes before it is answered; checks are answered one at a time, in turn"))

    @field_validator("local_duration", "check_duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        seconds = parse_duration(v)
        if seconds > MAX_MS / 1000:
            raise ValueError(f"must be at most 1h of cluster time, got {str(v)[:40]!r}")
        return seconds


#: The ``transaction:`` field's type: off (None) or a :class:`Transaction`.
TransactionKey = Annotated[Transaction | None, BeforeValidator(switch(
    Transaction, "{local, check, local_duration, check_duration}")), Field(json_schema_extra=boolean_too)]


def entry_problem(transaction: Transaction | None, mode: str, batch: int, ordered: bool) -> str | None:
    """A transactional producer sends one message at a time, synchronously, without a selector."""
    problem = transaction_problem(mode, batch, ordered) if transaction is not None else None
    return f"transaction: {problem}" if problem else None


def transaction_workload(transaction: Transaction | None) -> dict[str, Any]:
    """The producer workload's ``transaction`` entry, in the node spec's form (ms; nothing when off)."""
    if transaction is None:
        return {}
    return {"transaction": {"local": transaction.local.model_dump(), "check": transaction.check.model_dump(),
                            "local_ms": transaction.local_duration * 1000.0,
                            "check_ms": transaction.check_duration * 1000.0}}
