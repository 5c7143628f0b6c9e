"""The event registry's part for ordered messages (docs/rocketmq-model.md §3.7, §4.9): the fields
an ordered send adds to ``send`` / ``send.fail``, imported by :mod:`rmqemu.event_kinds`.

An order checker joins them: per group and sharding key, the acked ``send`` lines in a producer's
log order are the send order (one producer per key, one send of a key at a time).
"""

from __future__ import annotations

from rmqemu.event_types import INT, STR, Field

#: Added to ``send`` and ``send.fail`` by an ordered send (``SelectMessageQueueByHash``).
SEND_FIELDS = (
    Field("sharding_key", STR, "an ordered send: the key the queue was selected by "
          "(`SelectMessageQueueByHash`: index `abs(hashCode(key) % route_queues)`), absent on other sends", ext=True),
    Field("route_queues", INT, "an ordered send: the size of the publish queue list the queue was chosen "
          "from (the producer's route then), absent when no route had a queue", ext=True),
)
