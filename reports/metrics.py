"""Assemble ``report/metrics.json`` from an :class:`~reports.pipeline.Analysis`.

The keys of docs/design.md §7 are all present with the same names; additions sit next to
them. Every duration key ending in ``_ms`` gets a ``..._cluster_s`` twin
(wall ms / 1000 / ``scale``), added by :func:`with_cluster_seconds` so no field can be
forgotten. Absolute times are not durations: they are given as offsets from the run's
first event (``start_offset_ms``), which are durations and get twins too.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, functions as F

from reports import availability, clients, drain, gather, loss, misrouted, timing
from reports.intervals import RUN, scalar
from reports.misrouted import REASONS
from reports.load import RunData
from reports.pipeline import Analysis


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


def metric_queries(a: Analysis) -> dict[str, Query]:
    """The small queries behind ``metrics.json``, by name (what :func:`assemble` reads),
    each with a ``run`` column: one query answers for every run of the analysis.

    Nothing runs here: the report collects these together with the plot queries in one
    action (:mod:`reports.gather`)."""
    run, ev = a.run, a.run.events
    t0 = scalar(run.run_start)
    cols = ["topic", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms", "measured_ms"]
    windows = availability.unavailable_windows(a.sends, run.measure_end)  # docs/design.md §9
    conv = availability.with_impact(
        a.convergence.join(a.faults.select(RUN, "fault_id", "targets", "end", "has_end"), [RUN, "fault_id"]),
        a.faults, windows, a.classified, run.measure_end)
    conv = conv.select(RUN, "fault_id", "fault", "targets",
                       (F.col("start") - t0).alias("start_offset_ms"),
                       (F.col("end") - t0).alias("end_offset_ms"), "has_end",
                       "converged_ms", "stale_views",
                       (F.col("impact_end") - t0).alias("impact_end_offset_ms"),
                       "rto_ms", "failed_sends", "misrouted_sends")
    return {
        "m.consumption": (clients.consumption(ev, a.sends, run.stop_ms), ["topic"]),
        "m.group_loss": (loss.group_loss(ev, a.sends, run.stop_ms), ["group", "topic"]),
        "m.availability": (availability.availability_by_pair(a.sends, windows), ["producer", "topic"]),
        "m.nsq": (clients.non_subscriber_queues(ev), ["group", "topic"]),
        "m.sne": (clients.subscription_not_exist(ev), ["node", "topic"]),
        "m.autocreate": (clients.autocreate_coverage(ev, run.nodes, a.hosts, a.autocreate), ["topic"]),
        "m.outcomes": (clients.send_outcomes(a.sends), None),
        "m.latency": (clients.latency_percentiles(a.sends), None),
        "m.no_route": (clients.no_route_errors(a.sends), ["topic"]),
        "m.misrouted": (misrouted.misrouted_by_reason(a.classified), None),
        "m.clients": (a.client_staleness.select(RUN, "client", *cols), ["client", "topic"]),
        "m.namesrvs": (a.namesrv_staleness.select(RUN, "namesrv", *cols), ["namesrv", "topic"]),
        "m.faults": (conv, ["start_offset_ms", "fault_id"]),
        "m.timing": (timing.node_lag(ev, a.pauses, since=run.up_ms), ["node"]),
        "m.drain": (drain.query(ev), ["ts"]),
    }


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


def assemble(run: RunData, r: dict[str, Any]) -> dict[str, Any]:
    """The whole ``metrics.json`` document from the results of :func:`metric_queries`
    (durations with cluster-second twins). Pure Python: no Spark here."""
    man = run.manifest
    consumption, sne, nsq = r["m.consumption"], r["m.sne"], r["m.nsq"]
    doc = {
        "run": man.run, "name": man.name, "seed": man.seed, "scale": man.scale,
        "duration_ms": run.run_end - run.run_start,
        "events": run.event_count,
        "bad_lines": {"total": sum(run.bad_lines.values()), "by_file": dict(sorted(run.bad_lines.items()))},
        "staleness": _staleness(r),
        "misrouted": _misrouted(r["m.misrouted"]),
        "sends": _sends(r),
        "autocreate": r["m.autocreate"],
        "subscriptions": {
            "subscription_not_exist": {"total": sum(x["pulls"] for x in sne), "by_consumer": sne},
            "non_subscriber_queues": {"total": sum(x["unowned_queues"] for x in nsq), "by_group": nsq},
        },
        "consumption": {
            "lost": sum(x["lost"] for x in consumption),
            "duplicate_messages": sum(x["duplicate_messages"] for x in consumption),
            "duplicate_deliveries": sum(x["duplicate_deliveries"] for x in consumption),
            "consumed_unacked": sum(x["consumed_unacked"] for x in consumption),
            "by_topic": consumption,
            "lost_per_group": sum(x["lost"] for x in r["m.group_loss"]),
            "groups": r["m.group_loss"],
        },
        "availability": _availability(r["m.availability"]),
        "timing": timing.verdict(r["m.timing"], man.scale, [n.get("config") or {} for n in man.nodes.values()]),
        "drain": drain.summary(r["m.drain"]),
    }
    return with_cluster_seconds(doc, man.scale)


def build_metrics(a: Analysis) -> dict[str, Any]:
    """The whole ``metrics.json`` document of a one-run analysis, its queries in one action."""
    if not isinstance(a.run, RunData):
        raise TypeError("build_metrics: an analysis of one run (reports.job.compute_many for several)")
    queries = metric_queries(a)
    got = gather.collect_all({name: df for name, (df, _) in queries.items()})
    return assemble(a.run, metric_results(queries, got, a.run.id))
