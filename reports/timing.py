"""Timing health of a run (docs/design.md §9): did the host keep the nodes' timers on schedule?

Each node writes a ``node.lag`` summary per window (``[ts - window_ms, ts]``, host wall ms). A
window overlapping a pause of that node is dropped: a SIGSTOPped node is late because of the
fault, not the host. Per node, the run's lateness is its second-worst remaining window's
``p99_ms`` (:func:`rmqemu.timing.run_lateness`: one window, the transient of a process start, is
tolerated; the reason is in :mod:`rmqemu.timing`). The verdict compares it with
:func:`rmqemu.timing.threshold_ms`.

:func:`node_lag` is one small DataFrame -> DataFrame transform (a filter of the cached events,
an anti-join with the already built ``pauses`` table, a group-by): one more tiny query next to
the other metrics, collected in the same graph (:mod:`reports.tasks`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame, functions as F

from reports.intervals import RUN, scalar
from reports.truth import Scalar
from rmqemu import timing


def node_lag(events: DataFrame, pauses: DataFrame, since: Scalar | None = None) -> DataFrame:
    """``run, node, windows, lag_p99_ms, worst_window_p99_ms, lag_max_ms, paused_windows`` over each
    node's ``node.lag`` windows, those overlapping one of its pauses (``pauses``: ``node, start,
    end``) excluded from the lateness columns and counted in ``paused_windows``. ``lag_p99_ms`` is
    :func:`rmqemu.timing.run_lateness` of the windows (computed here in Spark). ``since``: the
    launcher's ``run.start``; windows that begin before it (spawning the cluster loads the host by
    itself) are left out (null: none)."""
    lag_lines = events.filter(F.col("kind") == "node.lag")
    if since is not None:
        up = scalar(since)
        lag_lines = lag_lines.filter(up.isNull() | (F.col("ts") - F.coalesce(F.col("window_ms"), F.lit(0.0)) >= up))
    lag = (lag_lines
           .select(RUN, "node", "ts", (F.col("ts") - F.coalesce(F.col("window_ms"), F.lit(0.0))).alias("w_start"),
                   "p99_ms", "max_ms"))
    # aliases, not renamed columns: a renamed ``run`` would lose the partitioning by run
    p = pauses.select(RUN, "node", "start", "end").alias("p")
    overlap = ((F.col("l.run") == F.col("p.run")) & (F.col("l.node") == F.col("p.node"))
               & (F.col("p.start") < F.col("l.ts")) & (F.col("p.end") > F.col("l.w_start")))
    flagged = (lag.alias("l").join(p, overlap, "left")
               .groupBy(*[F.col(f"l.{c}") for c in (RUN, "node", "ts", "w_start", "p99_ms", "max_ms")])
               .agg((F.count("p.node") > 0).alias("paused")))
    healthy = ~F.col("paused")
    ranked = F.sort_array(F.collect_list(F.when(healthy, F.col("p99_ms"))), asc=False)
    tolerated = timing.TOLERATED_WINDOWS
    lateness = F.try_element_at(ranked, F.lit(tolerated + 1))  # null with too few windows
    return (flagged.groupBy(RUN, "node")
            .agg(F.count(F.when(healthy, 1)).alias("windows"),
                 lateness.alias("lag_p99_ms"),
                 F.max(F.when(healthy, F.col("p99_ms"))).alias("worst_window_p99_ms"),
                 F.max(F.when(healthy, F.col("max_ms"))).alias("lag_max_ms"),
                 F.count(F.when(F.col("paused"), 1)).alias("paused_windows")))


def verdict(per_node: list[dict[str, Any]], scale: float, configs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics.json's ``timing``: ``healthy`` is None ("unknown") when no node wrote ``node.lag``
    outside a pause (a run from before node.lag existed, or one paused throughout)."""
    shortest = timing.shortest_period_ms(configs)
    threshold = timing.threshold_ms(scale, shortest)
    measured = [r for r in per_node if r.get("lag_p99_ms") is not None]
    worst = max(measured, key=lambda r: r["lag_p99_ms"], default=None)
    lag = None if worst is None else worst["lag_p99_ms"]
    return {
        "healthy": None if lag is None else lag <= threshold,
        "lag_p99_ms": lag,
        "worst_node": None if worst is None else worst["node"],
        "threshold_ms": threshold,
        "shortest_period_cluster_s": shortest / 1000.0,
        "suggested_scale": None if lag is None else timing.suggested_scale(scale, lag, threshold),
        "nodes": sorted(per_node, key=lambda r: r["node"]),
    }
