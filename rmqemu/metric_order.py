"""The ``order`` section of metrics.json (docs/design.md §7 "Order"): the paths the order checker
writes, registered by :mod:`rmqemu.metric_paths` after the availability section."""

from __future__ import annotations

from rmqemu.metric_units import BOOL, COUNT, GROUP, LIST, MS, REASONS, TABLE, TEXT, Metric

#: The causes of a violation, first match wins (the report's ``reports.core.order.CAUSES``; a test
#: keeps the two equal).
CAUSES: tuple[str, ...] = ("remapped", "handover", "redelivery")

_CAUSE_TEXT = {
    "remapped": "... out of order because the key's queue changed between the two sends (a route change)",
    "handover": "... whose two consumptions came from two consumers holding the queue at overlapping times",
    "redelivery": "... of any other cause (the same consumer again, a later holder, a retry)",
}

_UNHELD = ("deliveries to a real client from a queue it held no lock on then (the answer to a pull it gave up "
           "in a rebalance: the client drops it), left out of the check")


def order_metrics() -> list[Metric]:
    """The paths of the ``order`` section, in document order."""
    out: list[Metric] = []

    def add(path: str, unit: str, what: str) -> None:
        out.append(Metric(path, unit, what, "Order"))

    def table(path: str, what: str, cols: tuple[tuple[str, str, str], ...]) -> None:
        add(f"{path}[]", TABLE, what)
        for col, unit, text in cols:
            add(f"{path}[].{col}", unit, text)

    add("order", GROUP, "ordered messages against their consumption by orderly groups (docs/design.md §7 \"Order\")")
    add("order.messages", COUNT, "acked ordered messages checked by key: one per (orderly group, message of a "
                                 "topic it subscribes)")
    add("order.consumed", COUNT, "... of them the group consumed")
    add("order.keys", COUNT, "(orderly group, sharding key) pairs checked")
    add("order.keys_violated", COUNT, "... with an out-of-order or a duplicate message")
    add("order.queues", COUNT, "(orderly group, queue) pairs checked in offset order (messages without a known "
                               "key: a real client's)")
    add("order.queues_violated", COUNT, "... with an out-of-order or a duplicate message")
    add("order.out_of_order", COUNT, "messages whose first consumption came before that of an earlier message of "
                                     "their key (per queue: of a smaller offset)")
    add("order.duplicates", COUNT, "messages an orderly group consumed more than once")
    add("order.violations", COUNT, "out_of_order + duplicates")
    add("order.by_cause", GROUP, "the violations by cause, first match wins")
    for cause in CAUSES:
        add(f"order.by_cause.{cause}", COUNT, _CAUSE_TEXT[cause])
    add("order.unheld", COUNT, _UNHELD)
    table("order.groups", "one row per (orderly group, check)", (
        ("group", TEXT, "the consumer group"), ("by", TEXT, "`key` (sharding keys) or `queue` (queue offsets)"),
        ("units", COUNT, "keys or queues checked"), ("violated", COUNT, "... with a violation"),
        ("messages", COUNT, "messages checked"), ("consumed", COUNT, "... of them consumed"),
        ("out_of_order", COUNT, "out-of-order messages"), ("duplicates", COUNT, "duplicate messages"),
        *((cause, COUNT, f"violations caused by {cause}") for cause in CAUSES),
        ("unheld", COUNT, "deliveries left out as unheld (`order.unheld`)")))
    add("order.remaps", GROUP, "keys moved to another queue by a producer's route change")
    add("order.remaps.keys", COUNT, "sharding keys sent to another queue than their previous attempt's")
    add("order.remaps.moves", COUNT, "such attempts (a key moved and moved back counts twice)")
    table("order.remaps.changes", "one row per route change that moved a key", (
        ("producer", TEXT, "the producer node"), ("topic", TEXT, "the topic"),
        ("offset_ms", MS, "the change (its client.route line), from the run's first event"),
        ("before", LIST, "the route's brokers before it"), ("after", LIST, "... after it"),
        ("queues_before", COUNT, "the publish list's size before it"), ("queues_after", COUNT, "... after it"),
        ("stale_before", BOOL, "the producer's view was stale just before it"),
        ("stale_after", BOOL, "the view it installed was stale"),
        ("keys", COUNT, "keys it moved"), ("out_of_order", COUNT, "remapped out-of-order messages it caused")))
    add("order.failed_sends", GROUP, "ordered send attempts that were not ok (sendSelectImpl never retries)")
    add("order.failed_sends.total", COUNT, "such attempts")
    add("order.failed_sends.stale_route", COUNT, "... made while the producer's view of the topic was stale")
    add("order.failed_sends.no_route", COUNT, "... that found no route")
    add("order.failed_sends.misrouted", COUNT, "... whose target could not take them (any misrouting reason)")
    add("order.failed_sends.by_reason", GROUP, "... by misrouting reason (the misrouted table's rule)")
    for reason in REASONS:
        add(f"order.failed_sends.by_reason.{reason}", COUNT, f"... whose target was {reason.replace('_', ' ')}")
    add("order.availability", GROUP, "per sharding key: when attempts were made and none was ok "
                                     "(docs/design.md §9's windows, per key)")
    add("order.availability.keys", COUNT, "keys that made an attempt in the measured run")
    add("order.availability.unavailable_keys", COUNT, "... with an unavailability window")
    add("order.availability.windows", COUNT, "the keys' unavailability windows")
    add("order.availability.total_unavailable_ms", MS, "their length, summed over the keys")
    add("order.availability.max_unavailable_ms", MS, "the longest window of any key")
    table("order.availability.by_topic", "one row per topic with ordered sends", (
        ("topic", TEXT, "the topic"), ("keys", COUNT, "its keys"),
        ("unavailable_keys", COUNT, "... with a window"), ("windows", COUNT, "their windows"),
        ("total_ms", MS, "their total length"), ("max_ms", MS, "the longest")))
    return out
