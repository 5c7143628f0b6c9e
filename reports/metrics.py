"""Assemble ``report/metrics.json`` from an :class:`~reports.pipeline.Analysis`.

The keys of docs/design.md §7 are all present with the same names; additions sit next to
them. Every duration key ending in ``_ms`` gets a ``..._cluster_s`` twin
(wall ms / 1000 / ``scale``), added by :func:`with_cluster_seconds` so no field can be
forgotten. Absolute times are not durations: they are given as offsets from the run's
first event (``start_offset_ms``), which are durations and get twins too.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from pyspark.sql import DataFrame, functions as F

from reports import availability, clients, drain, gather, loss, misrouted, timing
from reports.intervals import RUN, scalar
from reports.misrouted import REASONS
from reports.load import RunData
from reports.pipeline import Analysis, Input
from reports.tasks import Step, given, run_steps, step
from rmqemu.errors import ExpectationError


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


#: A small query behind ``metrics.json``: the DataFrame and the columns its rows are sorted by.
Query = tuple[DataFrame, list[str] | None]


def metric_query_steps(run: Input) -> list[Step]:
    """The small queries behind ``metrics.json`` as steps of the analysis graph
    (:func:`reports.pipeline.analysis_steps`): step ``m.<name>`` gives ``(DataFrame, the
    columns its rows are sorted by)`` and depends only on the analysis tables it reads,
    each with a ``run`` column: one query answers for every run of the analysis.

    Why steps and not one function of the whole analysis: building a query is driver work
    (py4j, Catalyst); as steps, the queries over the events or over early tables are built
    on free threads while the long chain of the analysis (views -> truth -> stale
    intervals) is still being built, instead of one after another once it is done.

    Nothing runs here: the report collects these together with the plot queries in one
    action (:mod:`reports.gather`)."""
    ev, t0 = run.events, scalar(run.run_start)
    cols = ["topic", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms", "measured_ms"]

    def faults(conv: DataFrame, fault_df: DataFrame, windows: DataFrame, classified: DataFrame) -> Query:
        impact = availability.with_impact(
            conv.join(fault_df.select(RUN, "fault_id", "targets", "end", "has_end"), [RUN, "fault_id"]),
            fault_df, windows, classified, run.measure_end)
        return impact.select(RUN, "fault_id", "fault", "targets",
                             (F.col("start") - t0).alias("start_offset_ms"),
                             (F.col("end") - t0).alias("end_offset_ms"), "has_end",
                             "converged_ms", "stale_views",
                             (F.col("impact_end") - t0).alias("impact_end_offset_ms"),
                             "rto_ms", "failed_sends", "misrouted_sends"), ["start_offset_ms", "fault_id"]

    return [  # docs/design.md §7, §9
        step("m.windows", lambda s: availability.unavailable_windows(s, run.measure_end), "sends"),
        step("m.faults", faults, "convergence", "faults", "m.windows", "classified"),
        step("m.clients", lambda x: (x.select(RUN, "client", *cols), ["client", "topic"]), "client_staleness"),
        step("m.namesrvs", lambda x: (x.select(RUN, "namesrv", *cols), ["namesrv", "topic"]), "namesrv_staleness"),
        step("m.misrouted", lambda c: (misrouted.misrouted_by_reason(c), None), "classified"),
        step("m.consumption", lambda s: (clients.consumption(ev, s, run.stop_ms), ["topic"]), "sends"),
        step("m.group_loss", lambda s: (loss.group_loss(ev, s, run.stop_ms), ["group", "topic"]), "sends"),
        step("m.availability", lambda s, w: (availability.availability_by_pair(s, w), ["producer", "topic"]),
             "sends", "m.windows"),
        step("m.outcomes", lambda s: (clients.send_outcomes(s), None), "sends"),
        step("m.latency", lambda s: (clients.latency_percentiles(s), None), "sends"),
        step("m.no_route", lambda s: (clients.no_route_errors(s), ["topic"]), "sends"),
        step("m.autocreate", lambda h, a: (clients.autocreate_coverage(ev, run.nodes, h, a), ["topic"]),
             "hosts", "autocreate"),
        step("m.timing", lambda p: (timing.node_lag(ev, p, since=run.up_ms), ["node"]), "pauses"),
        step("m.nsq", lambda: (clients.non_subscriber_queues(ev), ["group", "topic"])),
        step("m.sne", lambda: (clients.subscription_not_exist(ev), ["node", "topic"])),
        step("m.drain", lambda: (drain.query(ev), ["ts"])),
    ]


#: The steps of :func:`metric_query_steps` that are not queries of ``metrics.json``.
HELPERS = ("m.windows",)


def metric_queries(a: Analysis) -> dict[str, Query]:
    """The small queries behind ``metrics.json``, by name (what :func:`assemble` reads),
    built from a finished analysis (:func:`metric_query_steps` in list order)."""
    tables = {f.name: getattr(a, f.name) for f in fields(Analysis) if f.name != "run"}
    steps = metric_query_steps(a.run)
    done = run_steps(given(tables) + steps)
    return {s.name: done[s.name] for s in steps if s.name not in HELPERS}


def metric_results(queries: dict[str, Query], got: dict[str, gather.Rows], run_id: int) -> dict[str, gather.Rows]:
    """Run ``run_id``'s collected rows of each query (without ``run``), sorted as the query
    says (stable JSON)."""
    return {name: gather.ordered(gather.of_run(got[name], run_id), order) for name, (_, order) in queries.items()}


def _staleness(r: dict[str, Any]) -> dict[str, Any]:
    cl, ns, conv = r["m.clients"], r["m.namesrvs"], r["m.faults"]
    total = {
        "stale_ms": sum(r["stale_ms"] for r in cl), "stale_over_ms": sum(r["stale_over_ms"] for r in cl),
        "stale_under_ms": sum(r["stale_under_ms"] for r in cl), "intervals": sum(r["intervals"] for r in cl),
        "max_ms": max([r["max_ms"] for r in cl], default=0.0),
        "stale_views": sum(1 for r in cl if r["stale_ms"] > 0), "views": len(cl),
        "max_converged_ms": max([f["converged_ms"] for f in conv], default=0.0),
    }
    return {"clients": cl, "namesrvs": ns, "faults": conv, "clients_total": total}


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
    first = r["m.outcomes"][0] if r["m.outcomes"] else dict.fromkeys(clients.OUTCOME_COLUMNS, 0)
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
        "by_topic": consumption,
        "lost_per_group": sum(x["lost"] for x in r["m.group_loss"]),
        "groups": r["m.group_loss"],
    }


#: The sections of ``metrics.json`` after the run's header (docs/metrics.md), in document
#: order: the queries each is assembled from, and how (``run``, the query results).
SECTIONS: dict[str, tuple[tuple[str, ...], Callable[[RunData, dict[str, Any]], Any]]] = {
    "staleness": (("m.clients", "m.namesrvs", "m.faults"), lambda run, r: _staleness(r)),
    "misrouted": (("m.misrouted",), lambda run, r: _misrouted(r["m.misrouted"])),
    "sends": (("m.outcomes", "m.latency", "m.no_route"), lambda run, r: _sends(r)),
    "autocreate": (("m.autocreate",), lambda run, r: r["m.autocreate"]),
    "subscriptions": (("m.sne", "m.nsq"), lambda run, r: _subscriptions(r)),
    "consumption": (("m.consumption", "m.group_loss"), lambda run, r: _consumption(r)),
    "availability": (("m.availability",), lambda run, r: _availability(r["m.availability"])),
    "timing": (("m.timing",), lambda run, r: timing.verdict(
        r["m.timing"], run.manifest.scale, [n.get("config") or {} for n in run.manifest.nodes.values()])),
    "drain": (("m.drain",), lambda run, r: drain.summary(r["m.drain"])),
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
    """The metric query steps behind ``sections`` (names of :func:`metric_query_steps`)."""
    return [q for s in sections for q in SECTIONS[s][0]]


def assemble(run: RunData, r: dict[str, Any], sections: Iterable[str] | None = None) -> dict[str, Any]:
    """The ``metrics.json`` document from the results of :func:`metric_queries` (durations
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


def build_metrics(a: Analysis) -> dict[str, Any]:
    """The whole ``metrics.json`` document of a one-run analysis, its queries in one action."""
    if not isinstance(a.run, RunData):
        raise TypeError("build_metrics: an analysis of one run (reports.job.compute_many for several)")
    queries = metric_queries(a)
    got = gather.collect_all({name: df for name, (df, _) in queries.items()})
    return assemble(a.run, metric_results(queries, got, a.run.id))
