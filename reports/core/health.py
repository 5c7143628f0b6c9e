"""Health of a run's measurement: the nodes' timer lateness (docs/design.md §9, "Timing
health") and the end-of-run drain (§6, §7 "Other metrics").

Per node, the lateness is the (:data:`rmqemu.timing.TOLERATED_WINDOWS` + 1)-th largest ``p99_ms``
of its ``node.lag`` windows that overlap none of its pauses (:func:`node_lag`, judged by
:func:`verdict`); the drain figures are the launcher's own ``run.drain`` line, copied
(:func:`drain_rows`, :func:`summary`). :func:`summary` and :func:`verdict` take plain rows, so
metrics.json is assembled on the driver from what the tasks return.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rmqemu import timing

#: The ``run.drain`` fields metrics.json's ``drain`` copies.
COLUMNS = ("completed", "waited_ms", "timeout_ms", "lag_total", "lag_left", "unreadable", "interrupted")

#: The columns of :func:`node_lag`, in order.
LAG_COLUMNS = ("node", "windows", "lag_p99_ms", "worst_window_p99_ms", "lag_max_ms", "paused_windows")


def node_lag(ev: pd.DataFrame, pauses: pd.DataFrame, since: float | None = None) -> pd.DataFrame:
    """``node, windows, lag_p99_ms, worst_window_p99_ms, lag_max_ms, paused_windows`` over each
    node's ``node.lag`` windows ``[ts - window_ms, ts]``; one overlapping a pause of its node
    (``pauses``: ``node, start, end``; ``start < ts`` and ``end > ts - window_ms``) is left out
    of the lateness columns and counted in ``paused_windows``. ``since``: the launcher's
    ``run.start``; windows that begin before it are left out (None: none)."""
    lag = ev.loc[ev["kind"] == "node.lag", ["node", "ts", "window_ms", "p99_ms", "max_ms"]]
    lag = lag.assign(w_start=lag["ts"] - lag["window_ms"].fillna(0.0))
    if since is not None and not (isinstance(since, float) and math.isnan(since)):
        lag = lag.loc[lag["w_start"] >= float(since)]
    # Spark groups the windows by all their columns: identical lines count once
    lag = (lag[["node", "ts", "w_start", "p99_ms", "max_ms"]].drop_duplicates()
           .astype({"p99_ms": "float64", "max_ms": "float64"}).reset_index(drop=True))
    p = pauses.loc[pauses["node"].notna(), ["node", "start", "end"]]
    hit = lag.loc[lag["node"].notna(), ["node", "ts", "w_start"]].reset_index().merge(p, on="node")
    hit = hit.loc[(hit["start"] < hit["ts"]) & (hit["end"] > hit["w_start"]), "index"]
    paused = np.zeros(len(lag), dtype=bool)
    paused[hit.to_numpy(dtype="int64")] = True
    lag["paused"] = paused
    # one number per node, null a node like any other (as Spark's group-by)
    lag["_g"] = lag.groupby("node", dropna=False, sort=True).ngroup() if len(lag) else 0
    out = lag.drop_duplicates("_g").sort_values("_g")[["node"]].reset_index(drop=True)
    groups = range(len(out))
    healthy = lag.loc[~lag["paused"]]
    ranked = healthy.loc[healthy["p99_ms"].notna(), ["_g", "p99_ms"]].sort_values(
        ["_g", "p99_ms"], ascending=[True, False])
    nth = ranked.loc[ranked.groupby("_g").cumcount() == timing.TOLERATED_WINDOWS].set_index("_g")["p99_ms"]
    g = healthy.groupby("_g")
    out["windows"] = g.size().reindex(groups, fill_value=0).to_numpy(dtype="int64")
    out["lag_p99_ms"] = nth.reindex(groups).to_numpy(dtype=float)
    out["worst_window_p99_ms"] = g["p99_ms"].max().reindex(groups).to_numpy(dtype=float)
    out["lag_max_ms"] = g["max_ms"].max().reindex(groups).to_numpy(dtype=float)
    out["paused_windows"] = lag.groupby("_g")["paused"].sum().reindex(groups, fill_value=0).to_numpy(dtype="int64")
    return out[list(LAG_COLUMNS)]


def verdict(per_node: list[dict[str, Any]], scale: float, configs: Iterable[Mapping[str, Any]],
            measured_ms: float | None = None) -> dict[str, Any]:
    """metrics.json's ``timing``: ``healthy`` is None ("unknown") when no node has a lateness
    (:func:`rmqemu.timing.run_lateness`: two ``node.lag`` windows after ``run.start`` outside its
    pauses). ``measured_ms``, the wall time those windows count over, and ``window_ms``, one
    window at this scale, are given so that the report can tell a run too short for a verdict
    (:func:`rmqemu.timing.too_short_for_verdict`) from one whose nodes wrote no such windows."""
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
        "window_ms": timing.window_ms(scale),
        "measured_ms": measured_ms,
        "nodes": sorted(per_node, key=lambda r: r["node"]),
    }


def measured_ms(run_start: float, run_end: float, up_ms: float | None) -> float:
    """The wall time ``node.lag`` windows count over: from ``run.start`` (every node up; the
    first event for a run without it, as :func:`node_lag` counts then) to the run's last event."""
    return run_end - (run_start if up_ms is None or math.isnan(up_ms) else up_ms)


def drain_rows(ev: pd.DataFrame) -> list[dict[str, Any]]:
    """The run's ``run.drain`` lines (one, normally) as plain dicts of ``ts`` and
    :data:`COLUMNS` (lists and dicts for nested values, None for nulls): what
    :func:`summary` takes."""
    lines = ev.loc[ev["kind"] == "run.drain", ["ts", *COLUMNS]]
    cols = {c: pa.array(lines[c], from_pandas=True).to_pylist() for c in lines.columns}
    return [{c: cols[c][i] for c in cols} for i in range(len(lines))]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The last ``run.drain`` as metrics.json's ``drain``; every value null when the run has none
    (an older run, or one interrupted or broken before its shutdown), so that an ``expect:`` on
    ``drain.completed`` is still a valid path."""
    if not rows:
        return {"completed": None, "waited_ms": None, "waited_cluster_s": None, "timeout_ms": None,
                "timeout_cluster_s": None, "lag_total": None, "lag_left": [], "unreadable": [],
                "interrupted": False}
    last = max(rows, key=lambda r: r["ts"])
    out = {k: last.get(k) for k in COLUMNS}
    out["lag_left"] = [{k: v for k, v in lag.items() if v is not None} for lag in out["lag_left"] or []]
    out["unreadable"] = list(out["unreadable"] or [])
    out["interrupted"] = bool(out["interrupted"])
    return out
