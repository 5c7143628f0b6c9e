"""The headline numbers of a run, read from a ``metrics.json`` document.

One list serves the report's summary table and ``rmqemu report --compare``, so the two
never disagree about what a user first asks: how long were clients stale, how many sends
went astray and why, what was lost. Pure Python over the metrics dict: ``--compare`` can
work from existing ``metrics.json`` files without starting Spark.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rmqemu import timing
from rmqemu.reports.core.sends import REASONS

Metrics = dict[str, Any]

#: Kinds of headline values: a duration in wall ms (shown with its cluster seconds too),
#: a count, or a plain number.
MS, COUNT = "ms", "count"


@dataclass(frozen=True)
class Headline:
    """One row of the summary: ``get`` returns the value (wall ms for ``MS`` rows)."""

    section: str
    label: str
    get: Callable[[Metrics], float | int | None]
    kind: str = COUNT


def _path(*keys: str) -> Callable[[Metrics], Any]:
    def get(m: Metrics) -> Any:
        cur: Any = m
        for k in keys:
            if not isinstance(cur, dict) or k not in cur:
                return None
            cur = cur[k]
        return cur
    return get


def _namesrv_total(m: Metrics) -> float:
    return float(sum(r.get("stale_ms") or 0.0 for r in m.get("staleness", {}).get("namesrvs", [])))


def _imbalanced_topics(m: Metrics) -> int:
    """Auto-created topics hosted by fewer masters than have auto-create on (TBW102)."""
    return sum(1 for r in m.get("autocreate", []) if r.get("of_auto_masters", 0) < len(r.get("auto_masters") or []))


def _sum(m: Metrics, *paths: tuple[str, ...]) -> int | None:
    """The values at ``paths`` summed (None when none is there: an older metrics.json)."""
    got = [v for p in paths if (v := _path(*p)(m)) is not None]
    return sum(got) if got else None


def _latency(scope: str, key: str) -> Callable[[Metrics], Any]:
    return lambda m: ((m.get("sends", {}).get("latency") or {}).get(scope) or {}).get(key)


def _max_rto(m: Metrics) -> float:
    """The longest unavailability window that started inside some fault's attribution window."""
    return max([f.get("rto_ms") or 0.0 for f in m.get("staleness", {}).get("faults", [])], default=0.0)


_S, _M, _L, _A, _O = "Route staleness", "Sends", "Loss and consumption", "Availability", "Order"
_D, _F, _T, _P = "Delays and retries", "DLedger failovers", "Transactions", "POP consumption"
HEADLINES: list[Headline] = [
    Headline("Run", "Run duration (first to last event)", _path("duration_ms"), MS),
    Headline("Run", "Events read", _path("events")),
    Headline("Run", "Broken lines skipped", _path("bad_lines", "total")),
    Headline(_S, "Client stale time, total over (client, topic)", _path("staleness", "clients_total", "stale_ms"), MS),
    Headline(_S, "... over: view lists a broker truth has not",
             _path("staleness", "clients_total", "stale_over_ms"), MS),
    Headline(_S, "... under: view misses a broker truth has",
             _path("staleness", "clients_total", "stale_under_ms"), MS),
    Headline(_S, "Longest client stale interval", _path("staleness", "clients_total", "max_ms"), MS),
    Headline(_S, "Client stale intervals", _path("staleness", "clients_total", "intervals")),
    Headline(_S, "(client, topic) views ever stale", _path("staleness", "clients_total", "stale_views")),
    Headline(_S, "(client, topic) views measured", _path("staleness", "clients_total", "views")),
    Headline(_S, "Slowest convergence after a fault", _path("staleness", "clients_total", "max_converged_ms"), MS),
    Headline(_S, "Namesrv stale time, total over (namesrv, topic)", _namesrv_total, MS),
    Headline(_M, "Send attempts", _path("sends", "attempts")),
    Headline(_M, "... ok", _path("sends", "ok")),
    Headline(_M, "... failed (timeout or error)", _path("sends", "failed")),
    Headline(_M, "... no route (never reached a broker)", _path("sends", "no_route")),
    Headline(_M, "Send latency p50 (all attempts)", _latency("all", "p50_ms"), MS),
    Headline(_M, "Send latency p99 (all attempts)", _latency("all", "p99_ms"), MS),
    Headline(_M, "Misrouted sends, total", _path("misrouted", "total")),
    *[Headline(_M, f"... {r}", _path("misrouted", "by_reason", r)) for r in REASONS],
    Headline(_M, '"No route info of/for this topic" errors', _path("sends", "no_route_errors", "total")),
    Headline(_A, "Longest unavailability of a (producer, topic)", _path("availability", "max_unavailable_ms"), MS),
    Headline(_A, "Unavailable time, total over (producer, topic)", _path("availability", "total_unavailable_ms"), MS),
    Headline(_A, "Longest unavailability starting in a fault's window (RTO)", _max_rto, MS),
    Headline(_L, "Messages acked", _path("sends", "acked")),
    Headline(_L, "Acked but never consumed (lost)", _path("consumption", "lost")),
    Headline(_L, "... left when every subscribing group's consumers had gone", _path("consumption", "gone")),
    Headline(_L, "... given up to a DLQ, still being retried, or still delayed at the end",
             lambda m: _sum(m, *(("consumption", k) for k in ("dead_lettered", "retrying", "delayed")))),
    Headline(_L, "... missed by a subscribing group, sum over (group, topic)", _path("consumption", "lost_per_group")),
    Headline(_L, "Messages consumed twice by one group", _path("consumption", "duplicate_messages")),
    Headline(_L, "SUBSCRIPTION_NOT_EXIST pulls", _path("subscriptions", "subscription_not_exist", "total")),
    Headline(_L, "Queues allocated to non-subscribers", _path("subscriptions", "non_subscriber_queues", "total")),
    Headline(_L, "Auto-created topics missing on some auto-create master", _imbalanced_topics),
    Headline(_D, "Delayed messages parked (delay levels and retries)", _path("delays", "parked")),
    Headline(_D, "... delivered late", _path("delays", "late")),
    Headline(_D, "... delivered early", _path("delays", "early")),
    Headline(_D, "... still pending at the end", _path("delays", "pending")),
    Headline(_D, "... of them overdue (due before the run stopped)", _path("delays", "overdue")),
    Headline(_D, "Latest first delivery", _path("delays", "lateness_max_ms"), MS),
    Headline(_D, "Timed messages parked (RocketMQ 5 delivery instants)", _path("delays", "timed", "parked")),
    Headline(_D, "... delivered early", _path("delays", "timed", "early")),
    Headline(_D, "... still parked at the end", _path("delays", "timed", "pending")),
    Headline(_D, "Messages taken back from consumers (retries)", _path("retries", "taken_back")),
    Headline(_D, "... parked in a DLQ (distinct messages)", _path("retries", "dead_lettered")),
    Headline(_O, "Ordered messages checked by key (per orderly group)", _path("order", "messages")),
    Headline(_O, "Keys with an out-of-order or duplicate message", _path("order", "keys_violated")),
    Headline(_O, "Messages consumed before an earlier message of their key", _path("order", "out_of_order")),
    Headline(_O, "Messages an orderly group consumed twice", _path("order", "duplicates")),
    *[Headline(_O, f"... violations caused by {c}", _path("order", "by_cause", c))
      for c in ("remapped", "handover", "redelivery")],
    Headline(_O, "Keys moved to another queue by a route change", _path("order", "remaps", "keys")),
    Headline(_O, "Ordered sends failed", _path("order", "failed_sends", "total")),
    Headline(_O, "... while the producer's route was stale", _path("order", "failed_sends", "stale_route")),
    Headline(_O, "Longest a key could not be sent", _path("order", "availability", "max_unavailable_ms"), MS),
    Headline(_F, "Leader elections (first ones included)", _path("failover", "elections")),
    Headline(_F, "Failovers (a new leader)", _path("failover", "failovers")),
    Headline(_F, "Longest without a master", _path("failover", "max_no_master_ms"), MS),
    Headline(_F, "Slowest namesrv to show a new master", _path("failover", "max_namesrv_stale_ms"), MS),
    Headline(_F, "Slowest client to show a new master", _path("failover", "max_client_stale_ms"), MS),
    Headline(_F, "Sends to an old master after it stopped leading", _path("failover", "stale_master_sends", "total")),
    Headline(_F, "Longest producer recovery (RTO) after a failover", _path("failover", "max_rto_ms"), MS),
    Headline(_F, "Acked messages lost by a DLedger group", _path("failover", "acked_lost")),
    Headline(_F, "Messages duplicated by a retried send committed anyway", _path("failover", "duplicates")),
    Headline(_F, "Messages re-consumed after a failover", _path("failover", "reconsumed")),
    Headline(_T, "Transactional messages committed", _path("transactions", "committed", "total")),
    Headline(_T, "... of them after a check", _path("transactions", "committed", "after_check")),
    Headline(_T, "... lost by a subscribing group", _path("transactions", "committed", "lost_per_group")),
    Headline(_T, "Rolled back", _path("transactions", "rolled_back", "total")),
    Headline(_T, "Discarded after the maximum checks or expired", _path("transactions", "discarded", "total")),
    Headline(_T, "Still open at the end", _path("transactions", "open", "total")),
    Headline(_T, "Committed messages stored twice", _path("transactions", "duplicates", "stored_twice")),
    Headline(_T, "Delivered without a commit (rolled back, discarded or open)", lambda m: _sum(
        m, *(("transactions", fate, "delivered") for fate in ("rolled_back", "discarded", "open")))),
    Headline(_T, "Half to visible, p99", _path("transactions", "visible", "p99_ms"), MS),
    Headline(_T, "Checks sent to no producer channel", _path("transactions", "checks", "no_channel")),
    Headline(_P, "Leases granted", _path("pop", "leases", "granted")),
    Headline(_P, "... expired and put back for another delivery", _path("pop", "leases", "expired")),
    Headline(_P, "Acks a proxy refused as expired or invalid (INVALID_RECEIPT_HANDLE)", lambda m: _sum(
        m, ("pop", "acks", "proxy", "expired"), ("pop", "acks", "proxy", "invalid"))),
    Headline(_P, "Highest delivery attempt", _path("pop", "attempts", "max")),
    Headline(_P, "Sent to a DLQ by a proxy", _path("pop", "dlq", "sent")),
    Headline(_P, "FIFO messages out of order or leased before the previous was acked", lambda m: _sum(
        m, ("pop", "fifo", "out_of_order"), ("pop", "fifo", "unacked_previous"))),
]


def cluster_s(ms: float, scale: float) -> float:
    """Wall ms -> cluster seconds (docs/design.md §3)."""
    return ms / 1000.0 / scale


def fmt_ms(ms: float | None, scale: float) -> str:
    """``"1,234 ms (123.4 cluster s)"``: every duration in both units."""
    if ms is None:
        return "n/a"
    return f"{fmt_num(ms)} ms ({fmt_num(cluster_s(ms, scale))} cluster s)"


def fmt_num(value: float | int | None) -> str:
    """Counts with thousands separators; fractions with at most 3 significant decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def timing_health(m: Metrics) -> str:
    """The run's timing verdict in words (docs/design.md §9): a compressed run on a host that
    cannot keep its timers on schedule measures the host, and the summary must say so first."""
    t = m.get("timing") or {}
    healthy, lag, node = t.get("healthy"), t.get("lag_p99_ms"), t.get("worst_node")
    if healthy is None:
        return timing_unknown(t, float(m.get("scale") or 1.0))
    limit = f"{fmt_num(t.get('threshold_ms'))} ms, 5 % of the {fmt_num(t.get('shortest_period_cluster_s'))} s period"
    if healthy:
        return f"healthy: worst timer lateness p99 {fmt_num(lag)} wall ms ({node}), below {limit}"
    return (f"NOT healthy: timers ran {fmt_num(lag)} wall ms late (p99, {node}), above {limit}; the run measures "
            f"the host, not RocketMQ: timing.scale {fmt_num(t.get('suggested_scale'))} keeps up even at this "
            f"lateness (an upper bound: an overloaded host falls less behind at a larger scale)")


def timing_unknown(t: Metrics, scale: float) -> str:
    """Why a run has no timing verdict, from what metrics.json says: a run shorter than the two
    ``node.lag`` windows a node's lateness needs (:func:`rmqemu.timing.too_short_for_verdict`),
    or one whose nodes wrote no such windows. Nothing says which rmqemu wrote a run (the manifest's
    version has not changed since before node.lag), so the second case claims no more than that."""
    measured, window = t.get("measured_ms"), t.get("window_ms")
    if measured is not None and window is not None and timing.too_short_for_verdict(measured, scale):
        return (f"unknown: the run was too short for a verdict: {fmt_ms(measured, scale)} from run.start (every "
                f"node up) to its last event, and a node's lateness needs two node.lag windows after run.start, "
                f"of {fmt_ms(window, scale)} each at this scale (docs/design.md §9); a longer run gets one")
    return "unknown: no node has two node.lag windows after run.start outside its pauses (docs/design.md §9)"


def headline_rows(m: Metrics) -> list[tuple[str, str, str]]:
    """``(section, label, formatted value)`` for the report's summary table; the timing
    verdict comes right after the run's size, before any metric it may invalidate."""
    scale = float(m.get("scale") or 1.0)
    out = []
    for h in HEADLINES:
        v = h.get(m)
        out.append((h.section, h.label, fmt_ms(v, scale) if h.kind == MS else fmt_num(v)))
        if h.label == "Broken lines skipped":
            out.append(("Run", "Timing health", timing_health(m)))
        if h.label.startswith("... missed by a subscribing group"):
            out.append((_L, "End-of-run drain (consumers caught up before they stopped)", drain_text(m)))
    return out


def drain_text(m: Metrics) -> str:
    """The drain in words: a loss only means loss when the consumers had the chance to catch up
    (docs/design.md §6), so the report says whether they did."""
    d = m.get("drain") or {}
    if d.get("completed") is None:
        return "not run (the run ended on a signal, or predates the drain)"
    scale = float(m.get("scale") or 1.0)
    waited = fmt_ms(d.get("waited_ms"), scale)
    if d["completed"]:
        return f"completed after {waited}"
    return f"NOT completed after {waited}: {fmt_num(d.get('lag_total'))} message(s) left behind"


def headline_values(m: Metrics) -> list[tuple[str, float | int | None]]:
    """Flat ``(label, value)`` pairs for comparing runs: an ``MS`` row becomes two rows,
    ``[wall ms]`` and ``[cluster s]`` (runs of different scales compare in cluster s)."""
    scale = float(m.get("scale") or 1.0)
    t = m.get("timing") or {}
    out: list[tuple[str, float | int | None]] = [("timing.scale", m.get("scale")),
                                                 ("timing.healthy", t.get("healthy")),
                                                 ("timing.lag_p99_ms [wall ms]", t.get("lag_p99_ms"))]
    for h in HEADLINES:
        v = h.get(m)
        if h.kind == MS:
            out.append((f"{h.label} [wall ms]", v))
            out.append((f"{h.label} [cluster s]", None if v is None else cluster_s(v, scale)))
        else:
            out.append((h.label, v))
    return out


#: Counters that each show one of the seed articles' phenomena: named in the one-line
#: summary whenever they are not zero, so a run that reproduced one says so at once.
PHENOMENA: list[tuple[str, Callable[[Metrics], Any]]] = [
    ('"No route info of/for this topic" error(s)', _path("sends", "no_route_errors", "total")),
    ("SUBSCRIPTION_NOT_EXIST pull(s)", _path("subscriptions", "subscription_not_exist", "total")),
    ("queue(s) allocated to non-subscribers", _path("subscriptions", "non_subscriber_queues", "total")),
    ("auto-created topic(s) missing on some auto-create master", _imbalanced_topics),
    ("ordered message(s) consumed out of order", _path("order", "out_of_order")),
    ("ordered message(s) consumed twice", _path("order", "duplicates")),
    ("DLedger failover(s)", _path("failover", "failovers")),
    ("acked message(s) lost by a DLedger group", _path("failover", "acked_lost")),
    ("transactional message(s) stored twice", _path("transactions", "duplicates", "stored_twice")),
    ("rolled-back message(s) delivered", _path("transactions", "rolled_back", "delivered")),
    ("committed transactional message(s) lost by a group", _path("transactions", "committed", "lost_per_group")),
    ("FIFO message(s) out of send order", _path("pop", "fifo", "out_of_order")),
    ("FIFO message(s) leased before the previous one was acked", _path("pop", "fifo", "unacked_previous")),
    ("timed message(s) delivered early", _path("delays", "timed", "early")),
]


def one_line(m: Metrics) -> str:
    """The run in one line (the CLI's last progress line): staleness, misrouted sends and
    losses always, then whichever seed phenomena occurred."""
    tot = m.get("staleness", {}).get("clients_total", {})
    parts = [f"clients stale {(tot.get('stale_ms') or 0):,.0f} wall ms in {tot.get('intervals') or 0} interval(s)",
             f"{fmt_num(m.get('misrouted', {}).get('total') or 0)} misrouted send(s)",
             f"{fmt_num(m.get('consumption', {}).get('lost') or 0)} lost message(s)"]
    parts += [f"{fmt_num(v)} {label}" for label, get in PHENOMENA if (v := get(m))]
    return "; ".join(parts)
