"""The event kinds of RocketMQ 5's POP consumption (a section of the registry, :mod:`rmqemu.event_kinds`
lists it in ``SECTIONS``): a lease's life on the broker, joined by ``msg_id`` (the UNIQ_KEY, which a
revived copy keeps) or by (group, topic, queue_id, queue offset, pop_time).

A master that hands a message out writes ``pop.lease``; the proxy's ack or renewal of it is a
``pop.ack`` or ``pop.change_invisible`` line; a lease that ran out un-acked is a ``pop.revive`` line
(the message put into the group's retry topic, or, in a FIFO group, handed out again by the pop
that found its queue free). docs/rocketmq-model.md §10.2, §10.3.
"""

from __future__ import annotations

from rmqemu.event_types import BOOL, INT, LONG, STR, Field, Kind, Section

_MSG = (
    Field("group", STR, "the consumer group", required=True),
    Field("topic", STR, "the topic the group consumes (a retry topic's own name is never given here)",
          required=True),
    Field("broker", STR, "broker name", required=True),
    Field("queue_id", INT, "the queue the message is in: its retry topic's when `retry`", required=True),
    Field("retry", BOOL, "the message is a copy in the group's retry topic `%RETRY%<group>_<topic>`",
          required=True),
    Field("fifo", BOOL, "a FIFO group's lease (`order=true`, revive queue 999)", required=True),
)

_ANSWER = (
    Field("msg_id", STR, "the UNIQ_KEY of the message at that offset, null when there is none", required=True,
          nullable=True),
    *_MSG,
    Field("offset", LONG, "the queue offset the request named", required=True),
    Field("code", INT, "the response code", required=True),
    Field("error", STR, "the remark of a refused request (for `malformed`: the Java exception's text)"),
)

POP = Section("POP consumption (RocketMQ 5)", (
    Kind("pop.lease", "broker", "POP_MESSAGE (200050) handed a message out, invisible to the group's other "
         "pops for `invisible_ms`", (
             Field("msg_id", STR, "the UNIQ_KEY (the offsetMsgId when it has none)", required=True),
             *_MSG,
             Field("queue_offset", LONG, "its offset in that queue", required=True),
             Field("attempt", INT, "the delivery attempt the consumer sees: `reconsumeTimes + 1`, a FIFO "
                   "message's `orderCountInfo` count + 1", required=True),
             Field("invisible_ms", LONG, "the pop's `invisibleTime`", required=True),
             Field("pop_time", LONG, "the pop time (the broker's wall ms), part of the receipt handle", required=True),
         )),
    Kind("pop.ack", "broker", "ACK_MESSAGE (200051) was answered", _ANSWER + (
        Field("result", STR, "`ok` (the ack record is written, or a FIFO offset marked done), `stale` (a FIFO "
              "offset below the pop offset, or of an older pop: SUCCESS, nothing done), `no_order_info` (a FIFO "
              "ack the broker had no order info for, lost in a kill: as 5.x, the pop offset moves to the offset "
              "after it, skipping any earlier un-acked message of that pop), `slave` or `not_written` "
              "(SUCCESS, but no ack record: a slave's store, or a revive queue no service reads), `malformed` "
              "(an `extraInfo` 5.x cannot read: SYSTEM_ERROR), `topic_not_exist`, `illegal_queue` "
              "(MESSAGE_ILLEGAL), `no_message` (the offset is outside the queue: NO_MESSAGE), `not_out` "
              "(a FIFO offset that pop did not hand out: MESSAGE_ILLEGAL)", required=True),
    )),
    Kind("pop.change_invisible", "broker", "CHANGE_INVISIBLE_TIME (200053) was answered: a lease renewed for "
         "`invisible_ms` from now (a new handle), or refused", _ANSWER + (
             Field("result", STR, "`ok`, or the causes of `pop.ack` (`slave`, `not_written`: the new "
                   "checkpoint could not be written, SYSTEM_ERROR, or `stale`: a FIFO renewal of an offset below the "
                   "pop offset or of another pop, SUCCESS but nothing renewed)", required=True),
             Field("invisible_ms", LONG, "the requested invisible time", required=True),
             Field("pop_time", LONG, "`ok`: the new handle's pop time"),
         )),
    Kind("pop.revive", "broker (master)", "a lease ran out un-acked: the revive service put the message into "
         "the group's retry topic with `reconsumeTimes + 1`, or a FIFO pop handed it out again", (
             Field("msg_id", STR, "the UNIQ_KEY, null when the message is gone from the store", required=True,
                   nullable=True),
             *_MSG,
             Field("queue_offset", LONG, "the leased message's offset in its queue", required=True),
             Field("result", STR, "`retry` (a copy is in `retry_topic`), `redelivered` (FIFO: the same offset "
                   "handed out again), `missing` (no message at that offset: nothing to put back), `put_failed` "
                   "(the copy could not be stored: the checkpoint is written again for later), `illegal_topic` "
                   "(the group's name makes a retry topic name no store file can carry: dropped)", required=True),
             Field("retry_topic", STR, "where the copy went", required=True, nullable=True),
             Field("attempt", INT, "the delivery attempt of the next delivery", required=True, nullable=True),
             Field("pop_time", LONG, "the pop time of the lease that ran out (null for FIFO)", required=True,
                   nullable=True),
             Field("invisible_ms", LONG, "the invisible time of the lease that ran out (null for FIFO)",
                   required=True, nullable=True),
         )),
))
