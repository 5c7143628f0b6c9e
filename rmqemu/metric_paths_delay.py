"""The ``delays`` and ``retries`` sections of metrics.json (docs/design.md §7 "Delays and
retries"): the paths :mod:`reports.metrics_delays` writes, registered by :mod:`rmqemu.metric_paths`
after the consumption section."""

from __future__ import annotations

from rmqemu.metric_pop import timed_metrics
from rmqemu.metric_units import COUNT, GROUP, MS, NUMBER, TABLE, TEXT, Metric

SECTION = "Delays and retries"

#: The counts of a delayed message's status, shared by the totals and the per-topic rows.
_COUNTS = (
    ("sent", "distinct messages an ok send asked a delay level for (`send.delay_level`)"),
    ("parked", "entries a master parked in SCHEDULE_TOPIC_XXXX (`delay.park`): producers' delayed sends and "
               "retries"),
    ("delivered", "... delivered to their real topic (`delay.deliver`), once or more"),
    ("on_time", "... whose first delivery came within the tolerance of their due time, either way"),
    ("late", "... more than the tolerance after it"),
    ("early", "... more than the tolerance before it: a defect, or a master's clock set forward while it held them"),
    ("pending", "entries never delivered by the end of the run (the drain does not wait for them)"),
    ("overdue", "... of them due more than the tolerance before run.stop"),
    ("redelivered", "deliveries of an entry past its first (a master restarted before persisting its progress)"),
)
_LATENESS = (
    ("lateness_p50_ms", "median lateness of the first deliveries (true time: the master's clock, less any change "
                        "of its offset while it held the message; negative is early; null without a delivery)"),
    ("lateness_p99_ms", "p99 of it"), ("lateness_max_ms", "the latest first delivery"),
    ("lateness_min_ms", "the earliest first delivery"),
)
_RETRIES = (
    ("taken_back", "messages taken back from a consumer (`retry.back` lines: CONSUMER_SEND_MSG_BACK or a client's "
                   "own send to %RETRY%)"),
    ("retried", "... sent on to %RETRY%<group>"),
    ("dead_lettered", "distinct messages (by the id first acked) parked in %DLQ%<group>"),
    ("dropped", "messages taken back and dropped (the group has no retry queue)"),
    ("messages", "distinct (group, message) ever taken back"),
    ("via_send", "messages taken back through a client's own send to %RETRY% (its fallback)"),
    ("deliveries", "deliveries of broker-made copies: messages consumed from %RETRY% and %DLQ% topics"),
)


def delay_metrics() -> list[Metric]:
    """The paths of the two sections, in document order."""
    out: list[Metric] = []

    def add(path: str, unit: str, what: str) -> None:
        out.append(Metric(path, unit, what, SECTION))

    add("delays", GROUP, "messages with a delay level, each parked entry judged against its due time in true time")
    add("delays.tolerance_ms", MS, "on time means within this of the due time: 1 cluster s (twice the timing-health "
                                   "threshold of a default run, docs/design.md §7)")
    for col, text in _COUNTS:
        add(f"delays.{col}", COUNT, text)
    for col, text in _LATENESS:
        add(f"delays.{col}", MS, text)
    add("delays.by_topic[]", TABLE, "one row per real topic (a retry's is %RETRY%<group>)")
    add("delays.by_topic[].topic", TEXT, "the topic")
    for col, text in _COUNTS:
        add(f"delays.by_topic[].{col}", COUNT, text)
    for col, text in _LATENESS:
        add(f"delays.by_topic[].{col}", MS, text)
    timed_metrics(add)

    add("retries", GROUP, "messages consumers failed, taken back by the broker (docs/rocketmq-model.md §4.7)")
    for col, text in _RETRIES:
        add(f"retries.{col}", COUNT, text)
    add("retries.by_reconsume_times[]", TABLE, "one row per (group, topic, reconsumeTimes) taken back")
    for col, unit, text in (("group", TEXT, "the consumer group"), ("topic", TEXT, "the message's own topic"),
                            ("reconsume_times", NUMBER, "the reconsumeTimes of the copy made (1: first retry)"),
                            ("retried", COUNT, "copies sent to %RETRY%<group>"),
                            ("dead_lettered", COUNT, "copies sent to %DLQ%<group>"),
                            ("dropped", COUNT, "messages dropped")):
        add(f"retries.by_reconsume_times[].{col}", unit, text)
    add("retries.dlq[]", TABLE, "one row per (group, topic) with messages in the DLQ")
    for col, unit, text in (("group", TEXT, "the consumer group"), ("topic", TEXT, "the message's own topic"),
                            ("messages", COUNT, "distinct messages parked in %DLQ%<group>")):
        add(f"retries.dlq[].{col}", unit, text)
    return out
