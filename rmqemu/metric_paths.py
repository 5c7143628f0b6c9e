"""Every path of ``report/metrics.json``, its unit and what it means: the registry behind
docs/metrics.md and behind the static check of ``expect:`` (docs/design.md §9).

Why a registry: a topology's ``expect:`` is checked by ``rmqemu validate`` long before any
metrics.json exists, so "a path metrics.json does not have" has to be known without one.
The report writes the document (``reports/metrics.py``); a test computes a real one and
checks that its paths and this list are the same, so neither can drift from the other.

Path syntax: dotted keys; ``*`` is a key named by the run (a log file, a misrouting reason's
outcome); ``name[]`` is a table (a JSON list of rows) and ``name[].col`` one of its columns.
A table or a column of one is documented but cannot be an expectation: an expectation names
one value. Every ``..._ms`` duration has a ``..._cluster_s`` twin (wall ms / 1000 / scale),
added by the report to every such key; the registry lists the ``_ms`` path and derives the twin.

This module imports nothing from the project but its own parts (:mod:`rmqemu.metric_units`, the
order section in :mod:`rmqemu.metric_order`, the delays and retries sections in
:mod:`rmqemu.metric_paths_delay`, the DLedger failover section in :mod:`rmqemu.metric_failover`, the
transactions section in :mod:`rmqemu.metric_transactions`, the POP section and timed messages in
:mod:`rmqemu.metric_pop`):
the launcher (topology checks) and the report both read it.
``python -m rmqemu.metric_doc`` prints docs/metrics.md from it.
"""

from __future__ import annotations

import difflib
import re

from rmqemu.metric_failover import failover_metrics
from rmqemu.metric_order import order_metrics
from rmqemu.metric_paths_delay import delay_metrics
from rmqemu.metric_pop import holder_metrics, pop_metrics
from rmqemu.metric_transactions import transaction_metrics
from rmqemu.metric_units import (  # noqa: F401 (the registry's vocabulary, used from here)
    BOOL,
    COUNT,
    GROUP,
    LATENCY_SCOPES,
    LIST,
    MS,
    NUMBER,
    REASONS,
    TABLE,
    TEXT,
    Metric,
)

_STALE_COLUMNS = [
    ("topic", TEXT, "the topic"),
    ("stale_ms", MS, "time the view differed from the truth"),
    ("stale_over_ms", MS, "... of it with a broker the truth has not"),
    ("stale_under_ms", MS, "... of it missing a broker the truth has"),
    ("intervals", COUNT, "stale intervals"),
    ("max_ms", MS, "the longest stale interval"),
    ("measured_ms", MS, "time measured (from the first view to the run's end)"),
]


def _registry() -> list[Metric]:
    out: list[Metric] = []

    def add(section: str, path: str, unit: str, what: str) -> None:
        out.append(Metric(path, unit, what, section))

    s = "Run"
    add(s, "run", TEXT, "the run's id (its directory name)")
    add(s, "name", TEXT, "the topology's name")
    add(s, "seed", NUMBER, "the run's seed")
    add(s, "scale", NUMBER, "timing.scale: wall time per cluster time")
    add(s, "duration_ms", MS, "from the first event to the last")
    add(s, "events", COUNT, "event lines read")
    add(s, "bad_lines", GROUP, "unreadable lines skipped (a killed node may leave a truncated last line)")
    add(s, "bad_lines.total", COUNT, "unreadable lines in all files")
    add(s, "bad_lines.by_file", GROUP, "unreadable lines by file (only files that had some)")
    add(s, "bad_lines.by_file.*", COUNT, "unreadable lines of one file (keyed by its path)")

    s = "Route staleness"
    add(s, "staleness", GROUP, "route views against the truth (docs/design.md §7)")
    for table, who, what in (("clients", "client", "one row per (client, topic) view"),
                             ("namesrvs", "namesrv",
                              "one row per (namesrv, topic): the route built from its ns.route")):
        add(s, f"staleness.{table}[]", TABLE, what)
        add(s, f"staleness.{table}[].{who}", TEXT, f"the {who} node")
        for col, unit, text in _STALE_COLUMNS:
            add(s, f"staleness.{table}[].{col}", unit, text)
    holder_metrics(lambda path, unit, what: add(s, path, unit, what))
    add(s, "staleness.faults[]", TABLE, "one row per fault, in start order")
    for col, unit, text in (
            ("fault_id", TEXT, "the fault's id (f1, f2, ...)"), ("fault", TEXT, "its kind (kill, pause, ...)"),
            ("targets", LIST, "the nodes it took"), ("start_offset_ms", MS, "its start, from the run's first event"),
            ("end_offset_ms", MS, "its end (fault.end, else the run's end), from the run's first event"),
            ("has_end", BOOL, "whether a fault.end was written"),
            ("converged_ms", MS, "from its start to the end of the last client stale interval it caused"),
            ("stale_views", COUNT, "(client, topic) views stale in its window"),
            ("impact_end_offset_ms", MS, "the end of its attribution window, max(end, start + converged), "
                                         "from the run's first event (docs/design.md §9)"),
            ("rto_ms", MS, "the longest unavailability window starting in its attribution window"),
            ("failed_sends", COUNT, "non-ok attempts in its attribution window"),
            ("misrouted_sends", COUNT, "misrouted attempts in its attribution window"),
            ("late_deliveries", COUNT, "delayed and timed messages due in its attribution window and "
                                       "delivered late, or still undelivered at run.stop (docs/design.md §7 "
                                       "\"Delays and retries\")"),
            ("late_max_ms", MS, "the latest of those delivered (0 if none)")):
        add(s, f"staleness.faults[].{col}", unit, text)
    add(s, "staleness.clients_total", GROUP, "the client rows summed")
    for col, unit, text in (
            ("stale_ms", MS, "client stale time, summed over (client, topic)"),
            ("stale_over_ms", MS, "... of it with a broker the truth has not"),
            ("stale_under_ms", MS, "... of it missing a broker the truth has"),
            ("intervals", COUNT, "client stale intervals"), ("max_ms", MS, "the longest client stale interval"),
            ("stale_views", COUNT, "(client, topic) views ever stale"),
            ("views", COUNT, "(client, topic) views measured"),
            ("max_converged_ms", MS, "the slowest convergence after a fault")):
        add(s, f"staleness.clients_total.{col}", unit, text)

    s = "Misrouted sends"
    add(s, "misrouted", GROUP, "send attempts at a broker that could not take them")
    add(s, "misrouted.total", COUNT, "misrouted send attempts")
    add(s, "misrouted.by_reason", GROUP, "misrouted attempts by reason, first match wins")
    for reason in REASONS:
        add(s, f"misrouted.by_reason.{reason}", COUNT, f"... whose target was {reason.replace('_', ' ')}")
    add(s, "misrouted.by_reason_outcome", GROUP, "misrouted attempts by reason and outcome")
    add(s, "misrouted.by_reason_outcome.*", GROUP, "one reason's attempts by outcome (only reasons that occurred)")
    add(s, "misrouted.by_reason_outcome.*.*", COUNT, "attempts of one reason and outcome (ok, timeout, error, ...)")

    s = "Sends"
    add(s, "sends", GROUP, "the producers' send attempts")
    for col, text in (("attempts", "send attempts"), ("ok", "... that succeeded"),
                      ("failed", "... that timed out or failed"),
                      ("no_route", "... that found no route (never reached a broker)"),
                      ("timeout", "... that timed out"), ("error", "... that failed with an error"),
                      ("other", "... with any other outcome"), ("messages", "distinct messages sent"),
                      ("acked", "distinct messages acknowledged")):
        add(s, f"sends.{col}", COUNT, text)
    add(s, "sends.latency", GROUP, "send latency percentiles by scope")
    for scope in LATENCY_SCOPES:
        who = "every attempt" if scope == "all" else "ok attempts"
        add(s, f"sends.latency.{scope}", GROUP, f"latency of {who}")
        add(s, f"sends.latency.{scope}.n", COUNT, f"{who} measured")
        for q in ("p50", "p90", "p99", "max", "mean"):
            add(s, f"sends.latency.{scope}.{q}_ms", MS, f"{q} latency of {who}")
    add(s, "sends.no_route_errors", GROUP, '"No route info of this topic" errors (sendDefaultImpl) and "No route '
                                           'info for this topic" ones (sendSelectImpl: ordered sends)')
    add(s, "sends.no_route_errors.total", COUNT, "such errors")
    add(s, "sends.no_route_errors.by_topic[]", TABLE, "one row per topic")
    add(s, "sends.no_route_errors.by_topic[].topic", TEXT, "the topic")
    add(s, "sends.no_route_errors.by_topic[].errors", COUNT, "its errors")

    s = "Auto-created topics"
    add(s, "autocreate[]", TABLE, "one row per auto-created topic (the TBW102 imbalance)")
    for col, unit, text in (("topic", TEXT, "the topic"), ("created_on", LIST, "brokers that auto-created it"),
                            ("hosted_on", LIST, "brokers that host it"),
                            ("auto_masters", LIST, "masters with autoCreateTopicEnable"),
                            ("hosts", COUNT, "brokers hosting it"),
                            ("of_auto_masters", COUNT, "auto-create masters hosting it")):
        add(s, f"autocreate[].{col}", unit, text)

    s = "Subscriptions"
    add(s, "subscriptions", GROUP, "consumers and their subscriptions")
    add(s, "subscriptions.subscription_not_exist", GROUP, "SUBSCRIPTION_NOT_EXIST pulls")
    add(s, "subscriptions.subscription_not_exist.total", COUNT, "such pulls")
    add(s, "subscriptions.subscription_not_exist.by_consumer[]", TABLE, "one row per (consumer, topic)")
    for col, unit, text in (("node", TEXT, "the consumer node"), ("group", TEXT, "its group"),
                            ("topic", TEXT, "the topic"), ("pulls", COUNT, "its SUBSCRIPTION_NOT_EXIST pulls")):
        add(s, f"subscriptions.subscription_not_exist.by_consumer[].{col}", unit, text)
    add(s, "subscriptions.non_subscriber_queues", GROUP, "queues allocated to a consumer not subscribing the topic")
    add(s, "subscriptions.non_subscriber_queues.total", COUNT, "such queues")
    add(s, "subscriptions.non_subscriber_queues.by_group[]", TABLE, "one row per (group, topic)")
    for col, unit, text in (("group", TEXT, "the group"), ("topic", TEXT, "the topic"),
                            ("subscribers", LIST, "client ids subscribing it"),
                            ("non_subscribers", LIST, "client ids of the group not subscribing it"),
                            ("queues", COUNT, "the topic's queues"),
                            ("unowned_queues", COUNT, "queues allocated to non-subscribers")):
        add(s, f"subscriptions.non_subscriber_queues.by_group[].{col}", unit, text)

    s = "Consumption"
    add(s, "consumption", GROUP, "acked messages against consumed ones. An acked message (first acked before "
        "run.stop) that no group consumed is, first match wins: dead_lettered, retrying, delayed, gone, else lost "
        "(docs/design.md §7 \"Consumption\"). Deliveries from %RETRY% and %DLQ% topics are retries: they make "
        "their message consumed (by the id it was first acked with) and count nowhere else here. A transactional "
        "producer's half is a message only once committed: its ok send is an ack only then")
    for col, text in (("lost", "acked messages no group had: some group subscribing the topic still had consumers "
                               "at run.stop, and none consumed, failed or gave up on them, nor were they delayed"),
                      ("gone", "acked messages no group consumed, every group subscribing the topic having left: "
                               "a broker.consumer line said it left, and at run.stop no live broker listed a "
                               "consumer of it (a real client that stopped early: rmqemu drains only its own)"),
                      ("dead_lettered", "acked messages no group consumed that a group gave up on: a retry.back to "
                                        "%DLQ% (maxReconsumeTimes reached) or dropped"),
                      ("retrying", "acked messages no group consumed that a group failed (consume.reconsume_later, "
                                   "or a retry.back) and had not consumed by the end"),
                      ("delayed", "acked messages no group consumed that were sent with a delay level and had not "
                                  "reached their topic by run.stop (the drain does not wait for parked messages)"),
                      ("duplicate_messages", "messages consumed more than once by one group from their own topic, "
                                             "not counting deliveries a real orderly client dropped (`order.unheld`)"),
                      ("duplicate_deliveries", "deliveries beyond each message's first, the unheld ones not counted"),
                      ("consumed_unacked", "messages consumed from a topic no ok send of theirs went to (a send that "
                                           "timed out but was stored); retries and delayed copies are not")):
        add(s, f"consumption.{col}", COUNT, text)
    add(s, "consumption.by_topic[]", TABLE, "one row per topic (not %RETRY% or %DLQ% topics)")
    add(s, "consumption.by_topic[].topic", TEXT, "the topic")
    for col in ("acked", "consumed", "lost", "gone", "dead_lettered", "retrying", "delayed", "duplicate_messages",
                "duplicate_deliveries", "consumed_unacked"):
        add(s, f"consumption.by_topic[].{col}", COUNT, f"{col.replace('_', ' ')} messages of the topic")
    add(s, "consumption.lost_per_group", COUNT,
        "acked messages a subscribing group never had while it still had consumers, summed over (group, topic)")
    add(s, "consumption.gone_per_group", COUNT,
        "acked messages a subscribing group never consumed because its consumers had left, summed over (group, topic)")
    add(s, "consumption.groups[]", TABLE, "one row per (group, topic) the group subscribes and some producer sent to")
    for col, unit, text in (("group", TEXT, "the consumer group"), ("topic", TEXT, "the topic"),
                            ("expected", COUNT, "the topic's messages acked before run.stop"),
                            ("consumed", COUNT, "... of them the group consumed (under any topic, a retry by the "
                                                "id first acked)"),
                            ("dead_lettered", COUNT, "... of the rest the group gave up on (%DLQ%, dropped)"),
                            ("retrying", COUNT, "... of the rest the group failed and was still retrying"),
                            ("delayed", COUNT, "... of the rest not delivered to the topic by run.stop"),
                            ("gone", COUNT, "... of the rest, when the group's consumers had all left by run.stop"),
                            ("lost", COUNT, "... of the rest, when the group still had consumers at run.stop")):
        add(s, f"consumption.groups[].{col}", unit, text)
    out += delay_metrics()

    s = "Availability"
    add(s, "availability", GROUP, "when producers made attempts and none was ok (docs/design.md §9)")
    add(s, "availability.max_unavailable_ms", MS, "the longest unavailability window of any (producer, topic)")
    add(s, "availability.total_unavailable_ms", MS, "unavailability windows summed over (producer, topic)")
    add(s, "availability.unavailable_pairs", COUNT, "(producer, topic) pairs with a window")
    add(s, "availability.windows[]", TABLE, "one row per (producer, topic) that made an attempt")
    for col, unit, text in (("producer", TEXT, "the producer node"), ("topic", TEXT, "the topic"),
                            ("windows", COUNT, "its unavailability windows"),
                            ("total_ms", MS, "their total length"), ("max_ms", MS, "the longest")):
        add(s, f"availability.windows[].{col}", unit, text)
    out += order_metrics()
    out += failover_metrics()
    out += transaction_metrics()
    out += pop_metrics()

    s = "Timing health"
    add(s, "timing", GROUP, "whether the host kept the nodes' timers (docs/design.md §9)")
    add(s, "timing.healthy", BOOL, "every node's lateness below the threshold; null when unknown: no node has "
        "two node.lag windows after run.start outside its pauses (the run was too short, or its nodes wrote none)")
    add(s, "timing.lag_p99_ms", MS, "the run's lateness: the worst node's (null when unknown)")
    add(s, "timing.worst_node", TEXT, "the node with that lateness")
    add(s, "timing.threshold_ms", MS, "the lateness allowed: 0.05 x the shortest period x scale")
    add(s, "timing.shortest_period_cluster_s", NUMBER, "the shortest period the metrics rest on, cluster s")
    add(s, "timing.suggested_scale", NUMBER, "a scale that keeps up at this lateness (null when unknown)")
    add(s, "timing.window_ms", MS, "one node.lag window at this scale: max(1 wall s, 10 cluster s)")
    add(s, "timing.measured_ms", MS, "time node.lag windows count over: run.start (every node up) to the last event")
    add(s, "timing.nodes[]", TABLE, "one row per node")
    for col, unit, text in (("node", TEXT, "the node"), ("windows", COUNT, "its node.lag windows counted"),
                            ("lag_p99_ms", MS, "its lateness: the second-worst window's p99"),
                            ("worst_window_p99_ms", MS, "its worst window's p99"),
                            ("lag_max_ms", MS, "its latest timer"),
                            ("paused_windows", COUNT, "windows left out: they overlap a pause of the node")):
        add(s, f"timing.nodes[].{col}", unit, text)

    s = "End-of-run drain"
    add(s, "drain", GROUP, "the launcher's wait after run.stop for every group to consume what was sent (run.drain)")
    add(s, "drain.completed", BOOL, "every consumer group caught up within timing.drainTimeout; null without run.drain")
    add(s, "drain.waited_ms", MS, "how long the launcher waited")
    add(s, "drain.timeout_ms", MS, "the bound: timing.drainTimeout x scale")
    add(s, "drain.lag_total", COUNT, "messages left unconsumed in every queue together")
    add(s, "drain.lag_left[]", TABLE, "the queues left behind (at most 50, largest lag first)")
    for col, unit, text in (("group", TEXT, "the consumer group"),
                            ("topic", TEXT, "a subscribed topic or %RETRY%<group>"),
                            ("broker", TEXT, "the broker name"), ("queue_id", NUMBER, "the queue"),
                            ("lag", COUNT, "the master's max offset minus the group's consumed offset"),
                            ("consumer", TEXT, "BROADCASTING: the instance behind")):
        add(s, f"drain.lag_left[].{col}", unit, text)
    add(s, "drain.unreadable", LIST, "masters whose offsets could not be read (their queues count as not drained)")
    add(s, "drain.interrupted", BOOL, "a signal cut the drain short")
    return out


METRICS: list[Metric] = _registry()


def all_paths() -> dict[str, Metric]:
    """Every path, ``_cluster_s`` twins included, to its entry."""
    out: dict[str, Metric] = {}
    for m in METRICS:
        out[m.path] = m
        if m.twin:
            out[m.twin] = m
    return out


def _pattern(path: str) -> re.Pattern[str]:
    """A path's regular expression: ``*`` is one key, the last one any text (a key named by the
    run may hold dots: ``bad_lines.by_file.*`` is keyed by file paths)."""
    parts = path.split(".")
    return re.compile(r"\.".join(".+" if part == "*" and i == len(parts) - 1 else "[^.]+" if part == "*"
                                  else re.escape(part) for i, part in enumerate(parts)))


_PATTERNS = [(_pattern(p), m) for p, m in all_paths().items()]


def find(path: str) -> Metric | None:
    """The entry a concrete dotted path falls under (``*`` matching any one key), else None."""
    found = [(p, m) for p, (pat, m) in zip(all_paths(), _PATTERNS, strict=True) if pat.fullmatch(path)]
    return max(found, key=lambda pm: pm[0].count("."))[1] if found else None  # the most specific


def problem(path: str) -> str | None:
    """Why ``path`` cannot be an expectation, or None when it can."""
    metric = find(path)
    if metric is None:
        values = [p for p, m in all_paths().items() if m.is_value]
        close = difflib.get_close_matches(path, values, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}? " if close else ""
        return f"metrics.json has no such path ({hint}docs/metrics.md lists them)"
    if not metric.is_value:
        kind = "a table's column" if "[]" in metric.path else \
            f"a {metric.unit}" if metric.unit in (GROUP, TABLE) else metric.unit
        return f"is {kind}, not one number or true/false (docs/metrics.md lists the paths)"
    return None
