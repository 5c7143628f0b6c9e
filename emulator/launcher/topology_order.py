"""The topology's order keys: a producer entry's ``ordered:`` and a consumer entry's ``orderly:``.

``ordered: true`` (or ``{keys, pick}``) makes a producer group send every message with a sharding
key through ``SelectMessageQueueByHash`` (docs/rocketmq-model.md §3.7); ``orderly: true`` makes a
consumer group a ``MessageListenerOrderly`` push consumer with broker queue locks
(docs/rocketmq-model.md §4.9). The models and the checks against the rest of an entry live here;
:mod:`emulator.launcher.topology` holds the keys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from rmqemu.emulator.launcher.topology_remoting import boolean_too, switch

ORDERED_DESCRIPTION = (
    "ordered sends: every message gets a sharding key and goes to queue |hashCode(key) % n| of the "
    "producer's publish list (SelectMessageQueueByHash), one sync attempt, no retry elsewhere "
    "(sendSelectImpl); a key's next message waits for the previous one's outcome. true for the "
    "defaults, or {keys, pick}; needs mode sync and batch 1 (docs/rocketmq-model.md §3.7)")
ORDERLY_DESCRIPTION = (
    "MessageListenerOrderly: lock each queue on its master (LOCK_BATCH_MQ) before taking it, consume a "
    "queue's messages one at a time while the lock is held, suspend and retry in place on failure "
    "(fail_rate); needs messageModel CLUSTERING (docs/rocketmq-model.md §4.9)")


class Ordered(BaseModel):
    """How an ordered producer's messages get their sharding keys."""

    model_config = ConfigDict(extra="forbid")

    keys: int = Field(16, ge=1, le=100000, description="sharding keys per instance, named <node>:<i>; "
                                                         "key i uses topics[i mod len(topics)]")
    pick: Literal["random", "cycle"] = Field(
        "random", description="the key of each message: a seeded uniform draw (random) or round-robin (cycle)")


#: The ``ordered:`` field's type: off (None) or an :class:`Ordered`.
OrderedKey = Annotated[Ordered | None, BeforeValidator(switch(Ordered, "{keys: N, pick: random|cycle}")),
                       Field(json_schema_extra=boolean_too)]


def ordered_problem(ordered: Ordered | None, mode: str, batch: int) -> str | None:
    """An ordered producer sends one message at a time, synchronously (``send(msg, selector, arg)``)."""
    if ordered is not None and (mode != "sync" or batch != 1):
        return (f"ordered: needs mode: sync and batch: 1 (an ordered send is one sync message through "
                f"SelectMessageQueueByHash), got mode: {mode}, batch: {batch}")
    return None


def orderly_problem(orderly: bool, message_model: str) -> str | None:
    if orderly and message_model != "CLUSTERING":
        return ("orderly: needs messageModel: CLUSTERING (the orderly consumer is modelled with its broker "
                f"queue locks, which a {message_model} consumer does not take)")
    return None


def ordered_workload(ordered: Ordered | None) -> dict[str, Any]:
    """The producer workload's ``ordered`` entry (nothing when off)."""
    return {} if ordered is None else {"ordered": ordered.model_dump()}
