"""The event kinds of delay levels, retries and consumer-group membership (a section of the
registry, :mod:`rmqemu.event_kinds` lists it in ``SECTIONS``).

They let the report follow a delayed message or a retry from end to end, joined by ``msg_id``
(the UNIQ_KEY, kept by every copy): ``send`` (its ``delay_level``) or ``retry.back``, then
``delay.park`` when the broker stores it in ``SCHEDULE_TOPIC_XXXX``, ``delay.deliver`` when it
reaches its real topic (again after a master restart: delivered twice, never early), and the
``consume`` lines of the group. Instants are the broker's cluster clock (``due_ms``,
``lateness_ms``; docs/design.md §3), which host time (``ts``) can be checked against with the
run's scale. RocketMQ 5's timed messages have theirs: ``timer.park`` and ``timer.deliver``, with
the instant asked for (``deliver_ms``) and the wheel's (``due_ms``). ``broker.consumer`` says when a
group's consumers, real clients included, went away.
"""

from __future__ import annotations

from rmqemu.event_types import BOOL, FLOAT, INT, LONG, STR, Field, Kind, Section

_WHERE = (
    Field("msg_id", STR, "the UNIQ_KEY (the offsetMsgId of a message without one)", required=True),
    Field("topic", STR, "the real topic (`REAL_TOPIC`): where the message is delivered", required=True),
    Field("queue_id", INT, "the real queue (`REAL_QID`)", required=True),
    Field("broker", STR, "broker name", required=True),
    Field("level", INT, "the delay level it waits (capped at the broker's highest)", required=True),
    Field("offset", LONG, "its offset in `SCHEDULE_TOPIC_XXXX`'s queue `level - 1`: the same entry delivered "
          "twice (after a restart) has the same offset", required=True),
    Field("due_ms", FLOAT, "when it is due: the broker's store time plus the level's delay, the broker's "
          "cluster wall clock (`local_ms` terms, in cluster ms)", required=True),
    Field("reconsume_times", INT, "the message's reconsumeTimes (0 for a producer's send)", required=True),
)

_TIMER_WHERE = (
    Field("msg_id", STR, "the UNIQ_KEY (the offsetMsgId of a message without one)", required=True),
    Field("topic", STR, "the real topic (`REAL_TOPIC`): where the message is delivered", required=True),
    Field("queue_id", INT, "the real queue (`REAL_QID`)", required=True),
    Field("broker", STR, "broker name", required=True),
    Field("offset", LONG, "its offset in `rmq_sys_wheel_timer`'s queue 0: the same entry delivered twice (after "
          "a kill or a new DLedger master) has the same offset", required=True),
    Field("deliver_ms", FLOAT, "the instant the producer asked for (`TIMER_DELIVER_MS`, or the store time plus "
          "`TIMER_DELAY_SEC` / `TIMER_DELAY_MS`), the broker's cluster wall clock", required=True),
    Field("due_ms", FLOAT, "when the wheel delivers it: the instant rounded up to `timerPrecisionMs` "
          "(`TIMER_OUT_MS` plus the precision)", required=True),
)

#: Added to ``send`` and ``send.fail``: a delayed message's level, on its attempts and when it was given up.
SEND_FIELDS = (
    Field("delay_level", INT, "the delay level it asked for (`DELAY` > 0, see `delay.park`)", ext=True),
)

DELAY = Section("Delays, retries and consumer groups", (
    Kind("delay.park", "broker (master)", "a message with a delay level (`DELAY` > 0) was stored in "
         "`SCHEDULE_TOPIC_XXXX` instead of its topic: a producer's delayed send, a retry, a DLQ-bound send "
         "that carried a delay (docs/rocketmq-model.md §2.9)", _WHERE + (
             Field("delay_ms", FLOAT, "the level's delay, cluster ms (`messageDelayLevel`)", required=True),
             Field("level_asked", INT, "the `DELAY` it carried, when above the highest level (then capped)"),
         )),
    Kind("delay.deliver", "broker (master)", "a parked message reached its real topic (`messageTimeup`): a "
         "new message there, same UNIQ_KEY, new offsetMsgId. Each level is strictly first in, first out. A "
         "master that was down delivers what fell due meanwhile after its restart, and again what it had "
         "delivered since its last persist of the delay offsets", _WHERE + (
             Field("lateness_ms", FLOAT, "the broker's cluster wall clock at delivery minus `due_ms`. Negative "
                   "is early, which only the clock-jump guard does (a due time more than the level's delay "
                   "ahead of the clock is taken as now)", required=True),
             Field("queue_offset", LONG, "its offset in the real queue", required=True),
             Field("offset_msg_id", STR, "the new copy's offsetMsgId: a message without UNIQ_KEY (ali-ons sets "
                   "none) is consumed under this id, while `msg_id` is the parked copy's", required=True),
         )),
    Kind("timer.park", "broker (master)", "a RocketMQ 5 timed message (`TIMER_DELIVER_MS`, `TIMER_DELAY_SEC` or "
         "`TIMER_DELAY_MS`, instant still ahead) was stored in `rmq_sys_wheel_timer` instead of its topic "
         "(docs/rocketmq-model.md §10.4)", _TIMER_WHERE + (
             Field("wait_ms", FLOAT, "cluster ms from the park to `deliver_ms` by the broker's clock, 0 or less "
                   "when due at once: the report places a pending message's due instant with it", required=True),
         )),
    Kind("timer.deliver", "broker (master)", "a timed message reached its real topic: a new message there, same "
         "UNIQ_KEY, new offsetMsgId, `TIMER_ENQUEUE_MS` and `TIMER_DEQUEUE_MS` added. What fell due while the "
         "master was down is delivered at its restart; what it delivered since its last checkpoint flush, again",
         _TIMER_WHERE + (
             Field("lateness_ms", FLOAT, "the broker's cluster wall clock at delivery minus `deliver_ms`: up to the "
                   "precision late on time, negative only after the broker's clock was set back (the wheel's "
                   "write time never moves back)", required=True),
             Field("queue_offset", LONG, "its offset in the real queue", required=True),
             Field("offset_msg_id", STR, "the new copy's offsetMsgId", required=True),
             Field("immediate", BOOL, "its slot had passed when it reached the wheel (`TIMER_ENQUEUE_MS` is "
                   "Long.MAX_VALUE): a restart's backlog, or a clock set forward", required=True),
         )),
    Kind("retry.back", "broker (master)", "a consumer's failed message was taken back: CONSUMER_SEND_MSG_BACK "
         "(`via` `send_back`) or a client's own send to `%RETRY%<group>` (`via` `send`, the client's fallback); "
         "where it goes next (docs/rocketmq-model.md §4.7)", (
             Field("group", STR, "the consumer group", required=True),
             Field("topic", STR, "the message's original topic (`RETRY_TOPIC`)", required=True),
             Field("msg_id", STR, "the UNIQ_KEY, else the id its send was answered with (as `consume` names it)",
                   required=True),
             Field("origin_msg_id", STR, "`ORIGIN_MESSAGE_ID`: the offsetMsgId of the first stored copy",
                   required=True, nullable=True),
             Field("reconsume_times", INT, "the new message's reconsumeTimes", required=True),
             Field("max_reconsume_times", INT, "the maximum it was judged by (the request's or the group's)",
                   required=True),
             Field("outcome", STR, "`retry` (to `%RETRY%<group>`), `dlq` (to `%DLQ%<group>`) or `dropped` (the "
                   "group has no retry queue: answered SUCCESS, nothing stored)", required=True),
             Field("level", INT, "the delay level it waits first (null: none, straight to its topic)",
                   required=True, nullable=True),
             Field("via", STR, "`send_back` or `send`", required=True),
             Field("client", STR, "who sent it: a node, or `client@<pid>`", required=True),
             Field("offset_msg_id", STR, "the new copy's offsetMsgId (parked or stored): the `msg_id` of its "
                   "`delay.park` and `delay.deliver` lines when it has no UNIQ_KEY. Null when dropped",
                   required=True, nullable=True),
         )),
    Kind("broker.consumer", "broker", "a client's channel joined or left a consumer group on this broker "
         "(docs/rocketmq-model.md §4.2): how the report tells a group whose consumers left (a real client "
         "stopping before the end) from one still consuming", (
             Field("group", STR, required=True),
             Field("client", STR, "the node, or `client@<pid>`", required=True),
             Field("client_id", STR, "the clientID it heartbeats with", required=True),
             Field("change", STR, "`joined` or `left`", required=True),
             Field("reason", STR, "on leaving: `unregister` (UNREGISTER_CLIENT), `closed` (its channel closed), "
                   "`idle` (no traffic for 120 s), `expired` (no heartbeat for 120 s)"),
             Field("remaining", INT, "the group's channels on this broker after the change", required=True),
             Field("real", BOOL, "a real client (the remoting port)", required=True),
         )),
))
