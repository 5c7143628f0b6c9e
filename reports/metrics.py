"""Assemble ``report/metrics.json`` from an :class:`~reports.pipeline.Analysis`.

The keys of docs/design.md §7 are all present with the same names; additions sit next to
them. Every duration key ending in ``_ms`` gets a ``..._cluster_s`` twin
(wall ms / 1000 / ``scale``), added by :func:`with_cluster_seconds` so no field can be
forgotten. Absolute times are not durations: they are given as offsets from the run's
first event (``start_offset_ms``), which are durations and get twins too.
"""
from __future__ import annotations

import math
from typing import Any

from pyspark.sql import DataFrame, functions as F

from reports import clients, misrouted, timing
from reports.misrouted import REASONS
from reports.load import RunData
from reports.pipeline import Analysis, built
from reports.tasks import Step, run_steps, step


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


def _clean(value: Any) -> Any:
    """JSON-safe plain Python: NaN -> None, Rows -> dicts, numpy-free."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def rows(df: DataFrame, order: list[str] | None = None) -> list[dict[str, Any]]:
    """Collect a small DataFrame as a list of plain dicts (sorted for stable JSON)."""
    if order:
        df = df.orderBy(*order)
    return [_clean(r.asDict(recursive=True)) for r in df.collect()]


def metric_steps(run: RunData) -> list[Step]:
    """One step per small query behind ``metrics.json``; each collects its rows and names
    the analysis tables (:func:`reports.pipeline.analysis_steps`) it reads.

    Kept apart from :func:`assemble` so that the report job can run these queries in the
    same graph as the analysis, the plot queries and the Parquet writes
    (:mod:`reports.tasks`): a query starts as soon as its tables exist. The ones on the
    events alone are the slowest and need nothing else, so they come first."""
    ev = run.events
    cols = ["topic", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms", "measured_ms"]

    def conv(convergence: DataFrame, faults: DataFrame) -> DataFrame:
        return (convergence.join(faults.select("fault_id", "targets", "end", "has_end"), "fault_id")
                .select("fault_id", "fault", "targets",
                        (F.col("start") - F.lit(run.run_start)).alias("start_offset_ms"),
                        (F.col("end") - F.lit(run.run_start)).alias("end_offset_ms"), "has_end",
                        "converged_ms", "stale_views"))

    return [
        step("m.consumption", lambda s: rows(clients.consumption(ev, s, run.stop_ms), ["topic"]), "sends"),
        step("m.nsq", lambda: rows(clients.non_subscriber_queues(ev), ["group", "topic"])),
        step("m.sne", lambda: rows(clients.subscription_not_exist(ev), ["node", "topic"])),
        step("m.autocreate", lambda h, au: rows(clients.autocreate_coverage(ev, run.nodes, h, au), ["topic"]),
             "hosts", "autocreate"),
        step("m.outcomes", lambda s: rows(clients.send_outcomes(s)), "sends"),
        step("m.latency", lambda s: rows(clients.latency_percentiles(s)), "sends"),
        step("m.no_route", lambda s: rows(clients.no_route_errors(s), ["topic"]), "sends"),
        step("m.misrouted", lambda c: rows(misrouted.misrouted_by_reason(c)), "classified"),
        step("m.clients", lambda st: rows(st.select("client", *cols), ["client", "topic"]), "client_staleness"),
        step("m.namesrvs", lambda st: rows(st.select("namesrv", *cols), ["namesrv", "topic"]), "namesrv_staleness"),
        step("m.faults", lambda c, f: rows(conv(c, f), ["start_offset_ms", "fault_id"]), "convergence", "faults"),
        step("m.timing", lambda p: rows(timing.node_lag(ev, p, since=run.up_ms), ["node"]), "pauses"),
    ]


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


def _sends(r: dict[str, Any]) -> dict[str, Any]:
    out = {k: (v or 0) for k, v in r["m.outcomes"][0].items()}
    out["latency"] = {row.pop("scope"): row for row in r["m.latency"]}
    errs = r["m.no_route"]
    out["no_route_errors"] = {"total": sum(e["errors"] for e in errs), "by_topic": errs}
    return out


def assemble(run: RunData, r: dict[str, Any]) -> dict[str, Any]:
    """The whole ``metrics.json`` document from the results of :func:`metric_steps`
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
        },
        "timing": timing.verdict(r["m.timing"], man.scale, [n.get("config") or {} for n in man.nodes.values()]),
    }
    return with_cluster_seconds(doc, man.scale)


def build_metrics(a: Analysis, workers: int = 1) -> dict[str, Any]:
    """The whole ``metrics.json`` document, its queries run on ``workers`` threads."""
    return assemble(a.run, run_steps(built(a) + metric_steps(a.run), workers))
