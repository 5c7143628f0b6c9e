"""The event registry's part for ordered messages (docs/rocketmq-model.md §3.7, §4.9): the fields
an ordered send adds to ``send`` / ``send.fail``, and the section of queue-lock kinds, both
imported by :mod:`rmqemu.event_kinds`.

An order checker joins them: per group and sharding key, the acked ``send`` lines in a producer's
log order are the send order (one producer per key, one send of a key at a time); per queue, the
``broker.lock`` lines give who held the broker's lock when (a broker's ``node.exit`` ends all of
its locks: they live in memory only).
"""

from __future__ import annotations

from rmqemu.event_types import BOOL, FLOAT, INT, LONG, STR, Field, Kind, ListOf, Section

#: Added to ``send`` and ``send.fail`` by an ordered send (``SelectMessageQueueByHash``).
SEND_FIELDS = (
    Field("sharding_key", STR, "an ordered send: the key the queue was selected by "
          "(`SelectMessageQueueByHash`: index `abs(hashCode(key) % route_queues)`), absent on other sends", ext=True),
    Field("route_queues", INT, "an ordered send: the size of the publish queue list the queue was chosen "
          "from (the producer's route then), absent when no route had a queue", ext=True),
)

#: Added to ``consume`` (emulated consumers and a real client's lines alike).
CONSUME_FIELDS = (
    Field("offsets", ListOf(LONG), "the queue offsets of `msg_ids`, in the same order", ext=True),
    Field("orderly", BOOL, "`true` from an orderly consumer (one listener call, one line)", ext=True),
)

_QUEUE = (Field("group", STR, required=True), Field("topic", STR, required=True),
          Field("broker", STR, "the queue's broker name", required=True), Field("queue_id", INT, required=True))

#: The kinds of queue locks (``RebalanceLockManager``, LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).
SECTION = Section("Ordered messages: queue locks", (
    Kind("broker.lock", "broker (any node answering LOCK_BATCH_MQ 41 / UNLOCK_BATCH_MQ 42: emulated orderly "
         "consumers and real clients alike)",
         "a queue's lock changed holder: `locked` (it was free), `taken_over` (its holder had not renewed it "
         "for over 60 s, scaled), `unlocked` (by its holder). A renewal writes nothing. The table is in "
         "memory only: the broker's `node.exit` ends every lock it held", _QUEUE + (
             Field("client_id", STR, "the client id that asked (the new holder, or the one unlocking)",
                   required=True),
             Field("peer", STR, "the node that asked (`client@<pid>` for a real client)", required=True),
             Field("change", STR, "`locked`, `taken_over` or `unlocked`", required=True),
             Field("previous", STR, "`taken_over`: the expired holder's client id"),
             Field("idle_ms", FLOAT, "`taken_over`: broker clock ms since the expired holder's last grant"),
         ), ext=True),
    Kind("orderly.lock", "consumer (orderly)",
         "the local lock of a queue changed: `locked` (granted while not held or expired), `expired` (30 s, "
         "scaled, after the last grant: consumption stops), `refused` (lockAll was not granted it), "
         "`dropped` (a rebalance gave the queue up), `unlocked` (shutdown). A renewal writes nothing", _QUEUE + (
             Field("client_id", STR, "this consumer's client id (as in `broker.lock`)", required=True),
             Field("change", STR, "`locked`, `expired`, `refused`, `dropped` or `unlocked`", required=True),
             Field("late_ms", FLOAT, "`expired`: cluster ms from the lock running out to this line (a paused "
                   "consumer writes it on resume): it ran out `late_ms` x scale wall ms before `ts`"),
             Field("locked", BOOL, "`dropped`: the local lock was held and not expired"),
             Field("cached", INT, "`dropped`: messages pulled and not consumed"),
             Field("unlock_delay_ms", FLOAT, "`dropped`: the broker lock is released after this long (20000 "
                   "while messages are cached, else 0)"),
         ), ext=True),
))
