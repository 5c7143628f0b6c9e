"""Assemble ``report/metrics.json`` from the core's metrics queries (``m.*``, :mod:`reports.core.analysis`).

The keys of docs/design.md §7 are all present with the same names; additions sit next to
them. Every duration key ending in ``_ms`` gets a ``..._cluster_s`` twin
(wall ms / 1000 / ``scale``), added by :func:`with_cluster_seconds` so no field can be
forgotten. Absolute times are not durations: they are given as offsets from the run's
first event (``start_offset_ms``), which are durations and get twins too. Pure Python.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rmqemu.errors import ExpectationError
from rmqemu.reports.core import health
from rmqemu.reports.core.order import CAUSES
from rmqemu.reports.core.sends import REASONS
from rmqemu.reports.core.settle import FATES
from rmqemu.reports.metrics_delays import DELAY_QUERIES, RETRY_QUERIES, delay_section, retry_section
from rmqemu.reports.metrics_delays import ORDER as DELAY_ORDER
from rmqemu.reports.metrics_failover import FAILOVER_QUERIES, failover_section
from rmqemu.reports.metrics_failover import ORDER as FAILOVER_ORDER
from rmqemu.reports.metrics_pop import ORDER as POP_ORDER
from rmqemu.reports.metrics_pop import POP_QUERIES, TIMER_QUERIES, by_holder, pop_section, timed
from rmqemu.reports.metrics_transactions import ORDER as TRANSACTION_ORDER
from rmqemu.reports.metrics_transactions import TRANSACTION_QUERIES, transactions_section
from rmqemu.reports.results import RunMeta, RunResult, rows

#: The columns of the send-outcome row, in order (all zero when a run made no attempt).
OUTCOME_COLUMNS: tuple[str, ...] = ("attempts", "ok", "failed", "no_route", "timeout", "error", "other",
                                    "messages", "acked")


def with_cluster_seconds(obj: Any, scale: float) -> Any:
    """Copy of ``obj`` where each numeric ``X_ms`` key gains ``X_cluster_s``."""
    if isinstance(obj, list):
        return [with_cluster_seconds(v, scale) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out[key] = with_cluster_seconds(value, scale)
        if key.endswith("_ms") and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key[:-3] + "_cluster_s"] = value / 1000.0 / scale
    return out


#: The metrics queries and the columns their rows are sorted by (stable JSON).
ORDER: dict[str, list[str] | None] = {
    "m.faults": ["start_offset_ms", "fault_id"], "m.clients": ["client", "topic"], "m.namesrvs": ["namesrv", "topic"],
    "m.misrouted": None, "m.consumption": ["topic"], "m.group_loss": ["group", "topic"],
    "m.availability": ["producer", "topic"], "m.outcomes": None, "m.latency": None, "m.no_route": ["topic"],
    "m.autocreate": ["topic"], "m.timing": ["node"], "m.nsq": ["group", "topic"], "m.sne": ["node", "topic"],
    "m.drain": ["ts"], "m.order_groups": ["group", "by"], "m.order_remaps": ["ts", "producer", "topic"],
    "m.order_failed": ["reason", "outcome", "stale"], "m.order_availability": ["topic"], "m.order_moved": None,
    **DELAY_ORDER, **FAILOVER_ORDER, **TRANSACTION_ORDER, **POP_ORDER,
}
_STALENESS_COLUMNS = ["topic", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms", "measured_ms"]


def metric_rows(result: RunResult, queries: Iterable[str] | None = None) -> dict[str, Any]:
    """The rows of each metrics query of ``result`` (all, or ``queries``), sorted by :data:`ORDER`."""
    t = result.tables
    out: dict[str, Any] = {}
    for name in (ORDER if queries is None else queries):
        df = t[name]
        if name in ("m.clients", "m.namesrvs"):
            df = df[[name[2:-1], *_STALENESS_COLUMNS, *(("holder", "via") if name == "m.clients" else ())]]
        out[name] = rows(df, ORDER[name])
    return out


def _staleness(r: dict[str, Any]) -> dict[str, Any]:
    cl, ns, conv = r["m.clients"], r["m.namesrvs"], r["m.faults"]
    total = {
        "stale_ms": sum(r["stale_ms"] for r in cl), "stale_over_ms": sum(r["stale_over_ms"] for r in cl),
        "stale_under_ms": sum(r["stale_under_ms"] for r in cl), "intervals": sum(r["intervals"] for r in cl),
        "max_ms": max([r["max_ms"] for r in cl], default=0.0),
        "stale_views": sum(1 for r in cl if r["stale_ms"] > 0), "views": len(cl),
        "max_converged_ms": max([f["converged_ms"] for f in conv], default=0.0),
    }
    return {"clients": cl, "namesrvs": ns, "faults": conv, "clients_total": total, "by_holder": by_holder(cl)}


def _misrouted(got: list[dict[str, Any]]) -> dict[str, Any]:
    by_reason = {r: 0 for r in REASONS}
    by_outcome: dict[str, dict[str, int]] = {}
    for r in got:
        by_reason[r["reason"]] += r["sends"]
        by_outcome.setdefault(r["reason"], {})[r["outcome"] or "null"] = r["sends"]
    return {"total": sum(by_reason.values()), "by_reason": by_reason, "by_reason_outcome": by_outcome}


def _availability(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """docs/design.md §9: the longest and the total unavailability over (producer, topic)."""
    return {"max_unavailable_ms": max([p["max_ms"] for p in pairs], default=0.0),
            "total_unavailable_ms": sum((p["total_ms"] for p in pairs), 0.0),
            "unavailable_pairs": sum(1 for p in pairs if p["windows"]), "windows": pairs}


def _sends(r: dict[str, Any]) -> dict[str, Any]:
    # a run without sends has no row (the counts are grouped by run): all zeros
    first = r["m.outcomes"][0] if r["m.outcomes"] else dict.fromkeys(OUTCOME_COLUMNS, 0)
    out = {k: (v or 0) for k, v in first.items()}
    out["latency"] = {row.pop("scope"): row for row in r["m.latency"]}
    errs = r["m.no_route"]
    out["no_route_errors"] = {"total": sum(e["errors"] for e in errs), "by_topic": errs}
    return out


def _subscriptions(r: dict[str, Any]) -> dict[str, Any]:
    sne, nsq = r["m.sne"], r["m.nsq"]
    return {"subscription_not_exist": {"total": sum(x["pulls"] for x in sne), "by_consumer": sne},
            "non_subscriber_queues": {"total": sum(x["unowned_queues"] for x in nsq), "by_group": nsq}}


def _consumption(r: dict[str, Any]) -> dict[str, Any]:
    consumption = r["m.consumption"]
    return {
        "lost": sum(x["lost"] for x in consumption),
        "duplicate_messages": sum(x["duplicate_messages"] for x in consumption),
        "duplicate_deliveries": sum(x["duplicate_deliveries"] for x in consumption),
        "consumed_unacked": sum(x["consumed_unacked"] for x in consumption),
        **{fate: sum(x[fate] for x in consumption) for fate in FATES if fate != "lost"},
        "by_topic": consumption,
        "lost_per_group": sum(x["lost"] for x in r["m.group_loss"]),
        "gone_per_group": sum(x["gone"] for x in r["m.group_loss"]),
        "groups": r["m.group_loss"],
    }


def _order(run: RunMeta, r: dict[str, Any]) -> dict[str, Any]:
    """docs/design.md §7 "Order": the checker's groups summed, the remaps, the failed ordered
    sends and the keys' availability."""
    groups, failed, avail = r["m.order_groups"], r["m.order_failed"], r["m.order_availability"]

    def total(rows: list[dict[str, Any]], col: str, by: str | None = None) -> int:
        return sum(x[col] for x in rows if by is None or x.get("by") == by)
    moved = r["m.order_moved"][0] if r["m.order_moved"] else {"keys": 0, "moves": 0}
    changes = [{"producer": c["producer"], "topic": c["topic"], "offset_ms": c["ts"] - run.run_start,
                **{k: v for k, v in c.items() if k not in ("producer", "topic", "ts")}} for c in r["m.order_remaps"]]
    return {
        "messages": total(groups, "messages", "key"), "consumed": total(groups, "consumed", "key"),
        "keys": total(groups, "units", "key"), "keys_violated": total(groups, "violated", "key"),
        "queues": total(groups, "units", "queue"), "queues_violated": total(groups, "violated", "queue"),
        "out_of_order": total(groups, "out_of_order"), "duplicates": total(groups, "duplicates"),
        "violations": total(groups, "out_of_order") + total(groups, "duplicates"),
        "by_cause": {c: total(groups, c) for c in CAUSES}, "unheld": total(groups, "unheld"), "groups": groups,
        "remaps": {"keys": moved["keys"], "moves": moved["moves"], "changes": changes},
        "failed_sends": {
            "total": total(failed, "sends"), "stale_route": sum(x["sends"] for x in failed if x["stale"]),
            "no_route": sum(x["sends"] for x in failed if x["outcome"] == "no_route"),
            "misrouted": sum(x["sends"] for x in failed if x["reason"] is not None),
            "by_reason": {reason: sum(x["sends"] for x in failed if x["reason"] == reason) for reason in REASONS}},
        "availability": {
            "keys": total(avail, "keys"), "unavailable_keys": total(avail, "unavailable_keys"),
            "windows": total(avail, "windows"), "total_unavailable_ms": sum((x["total_ms"] for x in avail), 0.0),
            "max_unavailable_ms": max([x["max_ms"] for x in avail], default=0.0), "by_topic": avail},
    }


#: The sections of ``metrics.json`` after the run's header (docs/metrics.md), in document
#: order: the queries each is assembled from, and how (``run``, the query results).
SECTIONS: dict[str, tuple[tuple[str, ...], Callable[[RunMeta, dict[str, Any]], Any]]] = {
    "staleness": (("m.clients", "m.namesrvs", "m.faults"), lambda run, r: _staleness(r)),
    "misrouted": (("m.misrouted",), lambda run, r: _misrouted(r["m.misrouted"])),
    "sends": (("m.outcomes", "m.latency", "m.no_route"), lambda run, r: _sends(r)),
    "autocreate": (("m.autocreate",), lambda run, r: r["m.autocreate"]),
    "subscriptions": (("m.sne", "m.nsq"), lambda run, r: _subscriptions(r)),
    "consumption": (("m.consumption", "m.group_loss"), lambda run, r: _consumption(r)),
    "delays": ((*DELAY_QUERIES, *TIMER_QUERIES), lambda run, r: {**delay_section(run, r), "timed": timed(r)}),
    "retries": (RETRY_QUERIES, retry_section),
    "availability": (("m.availability",), lambda run, r: _availability(r["m.availability"])),
    "order": (("m.order_groups", "m.order_remaps", "m.order_failed", "m.order_availability", "m.order_moved"),
              _order),
    "failover": (FAILOVER_QUERIES, failover_section),
    "transactions": (TRANSACTION_QUERIES, transactions_section),
    "pop": (POP_QUERIES, pop_section),
    "timing": (("m.timing",), lambda run, r: health.verdict(
        r["m.timing"], run.manifest.scale, [n.get("config") or {} for n in run.manifest.nodes.values()],
        health.measured_ms(run.run_start, run.run_end, run.info.up_ms))),
    "drain": (("m.drain",), lambda run, r: health.summary(r["m.drain"])),
}

#: The run's header: read from the load (bounds, counts, manifest), no query behind it.
HEADER = ("run", "name", "seed", "scale", "duration_ms", "events", "bad_lines")


def sections_of(only: Iterable[str] | None) -> tuple[str, ...]:
    """The sections a document limited to ``only`` needs, in document order: ``only`` names
    sections (``"consumption"``) or paths in them (``"consumption.lost"``; an ``expect:``
    mapping works, its keys are paths); the header needs none. None: every section.

    Why: a test that asserts a few metrics need not pay for the rest. The route-staleness
    section alone is most of a small run's analysis (the truth chain, the stale intervals,
    the per-fault impact over classified sends); ``consumption`` or ``sends`` read the
    send and consume events only."""
    if only is None:
        return tuple(SECTIONS)
    if isinstance(only, str):
        only = [only]
    wanted, unknown = set(), []
    for path in only:
        top = str(path).split(".", 1)[0]
        if top in SECTIONS:
            wanted.add(top)
        elif top not in HEADER:
            unknown.append(str(path))
    if unknown:
        raise ExpectationError(f"only: {', '.join(unknown)}: not a section of metrics.json or a path in one "
                               f"(sections: {', '.join(SECTIONS)}; docs/metrics.md lists the paths)")
    return tuple(s for s in SECTIONS if s in wanted)


def queries_of(sections: Iterable[str]) -> list[str]:
    """The metrics queries behind ``sections`` (``m.*`` tables of :mod:`reports.core.analysis`)."""
    return [q for s in sections for q in SECTIONS[s][0]]


def assemble(run: RunMeta, r: dict[str, Any], sections: Iterable[str] | None = None) -> dict[str, Any]:
    """The ``metrics.json`` document from the rows of :func:`metric_rows` (durations
    with cluster-second twins): every section, or the header and ``sections`` only (then
    ``r`` needs only their queries). Pure Python: no Spark here."""
    man = run.manifest
    doc: dict[str, Any] = {
        "run": man.run, "name": man.name, "seed": man.seed, "scale": man.scale,
        "duration_ms": run.run_end - run.run_start,
        "events": run.event_count,
        "bad_lines": {"total": sum(run.bad_lines.values()), "by_file": dict(sorted(run.bad_lines.items()))},
    }
    for name in (SECTIONS if sections is None else sections):
        doc[name] = SECTIONS[name][1](run, r)
    return with_cluster_seconds(doc, man.scale)


def document(result: RunResult, sections: Iterable[str] | None = None) -> dict[str, Any]:
    """The ``metrics.json`` document of an analysed run (every section, or ``sections``)."""
    queries = None if sections is None else queries_of(sections)
    return assemble(result.meta, metric_rows(result, queries), sections)
