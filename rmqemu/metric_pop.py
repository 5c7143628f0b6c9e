"""The RocketMQ 5 layer's paths of metrics.json: the ``pop`` section (docs/design.md §7 "POP
consumption"), the timed messages of the ``delays`` section and the route staleness section's view
holders (a proxy, a gRPC client). :mod:`rmqemu.metric_paths` registers them (POP after the
transactions section, the others inside their sections); :mod:`reports.metrics_pop` writes them."""

from __future__ import annotations

from collections.abc import Callable

from rmqemu.metric_units import COUNT, GROUP, MS, NUMBER, TABLE, TEXT, Metric

SECTION = "POP consumption"

#: ``pop.ack`` results (the report's ``reports.core.pop.BROKER_ACK_RESULTS``; a test keeps them equal).
BROKER_ACK_RESULTS: tuple[str, ...] = ("ok", "stale", "no_order_info", "slave", "not_written", "malformed",
                                       "topic_not_exist", "illegal_queue", "no_message", "not_out")
#: ``proxy.ack`` results as counted (``code_<n>`` is ``refused``).
PROXY_ACK_RESULTS: tuple[str, ...] = ("ok", "expired", "invalid", "no_broker", "timeout", "refused")
_PROXY_ACK_TEXT = {
    "ok": "... acked by the broker", "expired": "... refused with INVALID_RECEIPT_HANDLE: the lease had run out "
                                               "(never sent to the broker)",
    "invalid": "... refused with INVALID_RECEIPT_HANDLE: a handle that does not decode",
    "no_broker": "... no master of the handle's broker in the proxy's route",
    "timeout": "... the broker did not answer",
    "refused": "... the broker refused it (result code_<n>)"}
_FIFO_TEXT = (
    ("out_of_order", "messages first delivered before a message sent before them in their message group"),
    ("unacked_previous", "messages leased while the message sent just before them in their message group was not "
                         "acked yet, nor handed out before them in the same pop"),
)
_FAULT_COUNTS = (
    ("leases", "pop.lease lines in its window"), ("expired", "leases that ran out and were put back (pop.revive)"),
    ("redelivered", "leases with attempt > 1"), ("proxy_refused", "acks the proxies refused (expired, invalid)"),
    ("broker_refused", "pop.ack lines that acked nothing"), ("dlq", "proxy.dlq lines"),
    *_FIFO_TEXT,
)
#: Who holds a client view (the report's ``reports.core.staleness.HOLDERS``).
HOLDERS: tuple[str, ...] = ("client", "grpc", "proxy")
#: The timed-message counts of the delays section, shared by the totals and the per-topic rows.
TIMED_COUNTS = (
    ("sent", "distinct messages an ok send asked a delivery instant for (`send.deliver_ms`, a gRPC DELAY message)"),
    ("parked", "entries a master held on its timer wheel (`timer.park`)"),
    ("delivered", "... delivered to their real topic (`timer.deliver`), once or more"),
    ("on_time", "... whose first delivery came from the instant asked to the end of its wheel slot (`due_ms`) "
                "plus the tolerance"),
    ("late", "... later than that"),
    ("early", "... more than 1 wall ms before the instant asked, in true time: must be 0 unless a master's clock "
              "was set (the wheel is never early by its own clock)"),
    ("pending", "entries still parked at the end of the run (the drain does not wait for them)"),
    ("immediate", "first deliveries made at once: the slot had passed when the wheel read it (a restart's backlog "
                  "or a clock set forward)"),
    ("redelivered", "deliveries of an entry past its first (a master killed before flushing its timer checkpoint)"),
)
TIMED_LATENESS = (
    ("lateness_p50_ms", "median lateness of the first deliveries against the instant asked (true time; negative "
                        "is early; null without a delivery)"),
    ("lateness_p99_ms", "p99 of it"), ("lateness_max_ms", "the latest first delivery"),
    ("lateness_min_ms", "the earliest first delivery"),
)


def holder_metrics(add: Callable[[str, str, str], None]) -> None:
    """Register the route staleness section's labels of who holds a client view (a proxy is a
    route holder like a client: its view against the truth) through ``add(path, unit, what)``."""
    add("staleness.clients[].holder", TEXT, "who holds the view: client (a 4.x client), grpc (a RocketMQ 5 client, "
                                            "answered by a proxy) or proxy (a proxy's own cached route)")
    add("staleness.clients[].via", TEXT, "grpc: the proxy whose answer its latest route was (else null)")
    add("staleness.by_holder", GROUP, "the client views summed per holder")
    for h in HOLDERS:
        add(f"staleness.by_holder.{h}", GROUP, "the views held by gRPC clients" if h == "grpc" else
            f"the views held by a {h}")
        for col, unit, text in (("views", COUNT, "(holder, topic) views"), ("stale_views", COUNT, "... ever stale"),
                                ("stale_ms", MS, "their stale time summed"),
                                ("max_ms", MS, "the longest stale interval")):
            add(f"staleness.by_holder.{h}.{col}", unit, text)


def timed_metrics(add: Callable[[str, str, str], None]) -> None:
    """Register the delays section's timed-message paths through ``add(path, unit, what)``."""
    add("delays.timed", GROUP, "RocketMQ 5 timed messages (docs/rocketmq-model.md §10.4): each timer wheel entry "
                               "(broker, offset) judged against the instant its producer asked for, in true time")
    for col, text in TIMED_COUNTS:
        add(f"delays.timed.{col}", COUNT, text)
    for col, text in TIMED_LATENESS:
        add(f"delays.timed.{col}", MS, text)
    add("delays.timed.by_topic[]", TABLE, "one row per real topic")
    add("delays.timed.by_topic[].topic", TEXT, "the topic")
    for col, text in TIMED_COUNTS:
        add(f"delays.timed.by_topic[].{col}", COUNT, text)
    for col, text in TIMED_LATENESS:
        add(f"delays.timed.by_topic[].{col}", MS, text)


def pop_metrics() -> list[Metric]:
    """The paths of the ``pop`` section, in document order."""
    out: list[Metric] = []

    def add(path: str, unit: str, what: str) -> None:
        out.append(Metric(path, unit, what, SECTION))

    x = "pop"
    add(x, GROUP, "RocketMQ 5 POP consumption (docs/rocketmq-model.md §10.2, §10.3) from the masters' pop.* lines "
                  "and the proxies' proxy.* lines, joined by (consumer group, msg_id); all 0 in a run without it. "
                  "A client's redeliveries are also in consumption.duplicate_deliveries (consume lines); these "
                  "are the brokers' and proxies' own counts")
    add(f"{x}.leases", GROUP, "hand-outs of a message to a group (pop.lease)")
    for col, text in (("granted", "pop.lease lines"), ("fifo", "... of a FIFO group"),
                      ("from_retry", "... of a copy in the group's retry topic"),
                      ("expired", "leases that ran out un-acked and were put back: pop.revive with result retry or "
                                  "redelivered (FIFO)"),
                      ("redelivered", "leases with attempt > 1: a message handed out again after a lease ran out"),
                      ("revive_failed", "pop.revive lines that put nothing back (missing, put_failed, "
                                        "illegal_topic)")):
        add(f"{x}.leases.{col}", COUNT, text)
    add(f"{x}.messages", GROUP, "(group, message) pairs leased")
    for col, text in (("leased", "pairs leased at least once"),
                      ("redelivered", "... whose lease expired and that were leased again: a pop.revive put them "
                                      "back, or a later lease has a higher attempt"),
                      ("acked", "... a broker acked (pop.ack ok, or no_order_info)"),
                      ("unacked", "... never acked by the end of the run")):
        add(f"{x}.messages.{col}", COUNT, text)
    add(f"{x}.attempts", GROUP, "deliveries a (group, message) needed: its leases (a renewal is no new lease)")
    for col, text in (("once", "pairs leased once"), ("twice", "... twice"),
                      ("three_or_more", "... three times or more")):
        add(f"{x}.attempts.{col}", COUNT, text)
    add(f"{x}.attempts.max", NUMBER, "the highest delivery attempt of any lease (0 without one)")
    add(f"{x}.acks", GROUP, "acks by who answered them and how")
    add(f"{x}.acks.proxy", GROUP, "AckMessage entries a proxy answered for a gRPC client (proxy.ack)")
    add(f"{x}.acks.proxy.total", COUNT, "proxy.ack lines")
    for r in PROXY_ACK_RESULTS:
        add(f"{x}.acks.proxy.{r}", COUNT, _PROXY_ACK_TEXT[r])
    add(f"{x}.acks.broker", GROUP, "ACK_MESSAGE requests a broker answered (pop.ack), by result (docs/events.md)")
    add(f"{x}.acks.broker.total", COUNT, "pop.ack lines")
    for r in BROKER_ACK_RESULTS:
        add(f"{x}.acks.broker.{r}", COUNT, f"... with result {r}")
    add(f"{x}.acks.broker.other", COUNT, "... with any other result")
    add(f"{x}.renewals", GROUP, "changes of invisible time")
    add(f"{x}.renewals.proxy", COUNT, "ChangeInvisibleDuration calls a proxy got granted (proxy.change_invisible)")
    add(f"{x}.renewals.ok", COUNT, "CHANGE_INVISIBLE_TIME requests a broker granted (pop.change_invisible ok)")
    add(f"{x}.renewals.refused", COUNT, "... it did not")
    add(f"{x}.dlq", GROUP, "messages past the group's max attempts a proxy sent to the DLQ (proxy.dlq)")
    add(f"{x}.dlq.sent", COUNT, "... sent back and acked (result ok)")
    add(f"{x}.dlq.failed", COUNT, "... not sent back (timeout, code_<n>): their lease runs out")
    add(f"{x}.fifo", GROUP, "FIFO groups' order per message group (the send's sharding_key), over their leases")
    add(f"{x}.fifo.message_groups", COUNT, "(group, topic, message group) triples leased")
    add(f"{x}.fifo.messages", COUNT, "messages of them leased, per group")
    for col, text in _FIFO_TEXT:
        add(f"{x}.fifo.{col}", COUNT, text + ": must be 0")
    add(f"{x}.fifo.groups[]", TABLE, "one row per FIFO consumer group")
    for col, unit, text in (("group", TEXT, "the consumer group"),
                            ("message_groups", COUNT, "(topic, message group) pairs it was handed"),
                            ("messages", COUNT, "messages it was handed"), *((c, COUNT, t) for c, t in _FIFO_TEXT)):
        add(f"{x}.fifo.groups[].{col}", unit, text)
    add(f"{x}.faults[]", TABLE, "one row per fault, in start order: the lines in its attribution window "
                                "(docs/design.md §9)")
    for col, unit, text in (("fault_id", TEXT, "the fault"), ("fault", TEXT, "its kind"),
                            ("start_offset_ms", MS, "its start, from the run's first event"),
                            ("impact_end_offset_ms", MS, "the end of its attribution window"),
                            *((c, COUNT, t) for c, t in _FAULT_COUNTS)):
        add(f"{x}.faults[].{col}", unit, text)
    return out
