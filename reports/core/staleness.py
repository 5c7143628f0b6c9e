"""Route staleness (docs/design.md §7) of one run, or one node's share of it, as pandas tables.

A *view* is piecewise constant: each ``client.route`` (or ``ns.route``) line holds until the
next one for the same topic, or until the node's ``node.exit``; a view is a tuple of sorted
distinct broker names. Intersecting view intervals with truth intervals of the same topic
gives *pieces*; a piece is ``over`` if the view has a broker truth lacks, ``under`` if truth
has one the view lacks, and counts once in ``stale_ms`` when both. A *stale interval* is a
maximal run of contiguous stale pieces (over then under without a fresh moment: one).

Every function works on any subset of whole nodes (the engine calls them per node): a view
depends only on its node's lines and exits, and a piece only on the view and the run's truth.
The namesrv view: brokers whose queue data is writable (``perm & 2`` and ``write`` > 0, a
missing ``write`` counting as writable) and whose name is in ``masters``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core.intervals import END, START, from_change_points, num, overlap_pieces, runs_of, sorted_sets
from rmqemu.reports.core.schema import EVENTS, PERM_WRITE
from rmqemu.reports.core.truth import exits


def _arrow(column: pd.Series, type: pa.DataType | None = None) -> pa.Array:
    """A nested column as one contiguous Arrow array (parent indices count from its start)."""
    arr = pa.array(column, type=type)
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _brokers(queues: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(row, broker)`` of every queue in a column of queue lists (a null list has none)."""
    outer = _arrow(queues, EVENTS.field("publish_queues").type)
    rows = pc.list_parent_indices(outer).to_numpy(zero_copy_only=False).astype(np.int64)
    return rows, pc.struct_field(pc.list_flatten(outer), "broker").to_numpy(zero_copy_only=False)


def _views(lines: pd.DataFrame, ev: pd.DataFrame, who: str, run_end: float | None, until: float | None) -> pd.DataFrame:
    """Intervals of ``lines`` (``node, topic, ts, seq, view``) cut by the node's exits, and at
    ``until`` (the run's ``run.stop``: the shutdown is not measured; None: not cut)."""
    stops = exits(ev).dropna(subset=["node"]).merge(lines[["node", "topic"]].drop_duplicates(), on="node")
    both = pd.concat([lines.assign(_exit=False), stops.assign(_exit=True)], ignore_index=True)
    iv = from_change_points(both, ["node", "topic"], run_end)
    iv = iv[~iv["_exit"].to_numpy(bool)]
    cut = num(until)
    if cut < num(run_end):
        iv = iv[iv[START].to_numpy() < cut].assign(end=lambda d: np.minimum(d[END].to_numpy(float), cut))
    out = iv[["node", "topic", START, END, "view"]].rename(columns={"node": who}).reset_index(drop=True)
    out["view"] = out["view"].astype(object)
    return out


def _route_lines(ev: pd.DataFrame, kind: str) -> pd.DataFrame:
    return ev[(ev["kind"] == kind).to_numpy(bool)].reset_index(drop=True)


def client_views(ev: pd.DataFrame, run_end: float | None, until: float | None = None) -> pd.DataFrame:
    """``client, topic, start, end, view``: broker names in the client's publish queues."""
    lines = _route_lines(ev, "client.route")
    rows, names = _brokers(lines["publish_queues"])
    lines = lines[["node", "topic", "ts", "seq"]].assign(view=sorted_sets(rows, names, len(lines)).to_numpy(object))
    return _views(lines, ev, "client", run_end, until)


def namesrv_views(ev: pd.DataFrame, run_end: float | None, until: float | None = None) -> pd.DataFrame:
    """``namesrv, topic, start, end, view``: the producer route a namesrv would hand out."""
    lines = _route_lines(ev, "ns.route")
    qd = _arrow(lines["queue_datas"])
    q = pc.list_flatten(qd)
    q_row = pc.list_parent_indices(qd).to_numpy(zero_copy_only=False)
    perm = pc.fill_null(pc.bit_wise_and(pc.struct_field(q, "perm"), PERM_WRITE), 0).to_numpy(zero_copy_only=False)
    write = pc.fill_null(pc.struct_field(q, "write"), 1).to_numpy(zero_copy_only=False)
    broker = pc.struct_field(q, "broker").to_numpy(zero_copy_only=False)
    ms = _arrow(lines["masters"])
    masters = pd.DataFrame({"row": pc.list_parent_indices(ms).to_numpy(zero_copy_only=False),
                            "name": pc.list_flatten(ms).to_numpy(zero_copy_only=False)}).dropna()
    usable = pd.DataFrame({"row": q_row, "name": broker})[(perm != 0) & (write > 0)].dropna()
    usable = usable.merge(masters.drop_duplicates(), on=["row", "name"])
    view = sorted_sets(usable["row"].to_numpy(np.int64), usable["name"].to_numpy(object), len(lines))
    lines = lines[["node", "topic", "ts", "seq"]].assign(view=view.to_numpy(object))
    return _views(lines, ev, "namesrv", run_end, until)


def stale_pieces(views: pd.DataFrame, truth: pd.DataFrame, who: str) -> pd.DataFrame:
    """``<who>, topic, start, end, view, brokers, over, under, stale``."""
    p = overlap_pieces(views, truth[["topic", START, END, "brokers"]], ["topic"])
    p = p[[who, "topic", START, END, "view", "brokers"]]
    v, views_u = pd.factorize(p["view"])
    b, brokers_u = pd.factorize(p["brokers"])
    nb = max(len(brokers_u), 1)
    combos, inv = np.unique(v.astype(np.int64) * nb + b, return_inverse=True)  # few distinct pairs
    over_u = np.array([bool(set(views_u[c // nb]) - set(brokers_u[c % nb])) for c in combos], dtype=bool)
    under_u = np.array([bool(set(brokers_u[c % nb]) - set(views_u[c // nb])) for c in combos], dtype=bool)
    over, under = over_u[inv], under_u[inv]
    return p.assign(over=over, under=under, stale=over | under)


def stale_intervals(pieces: pd.DataFrame, who: str) -> pd.DataFrame:
    """``<who>, topic, start, end, duration_ms``: maximal contiguous stale stretches."""
    runs = runs_of(pieces, [who, "topic"], "stale")
    return runs.assign(duration_ms=runs[END] - runs[START])


#: Who holds a ``client.route`` view: an emulated or real 4.x client, a RocketMQ 5 client answered by
#: a proxy (``grpc``), or a proxy's own cached route (``proxy``, docs/rocketmq-model.md §10.1).
HOLDERS: tuple[str, ...] = ("client", "grpc", "proxy")


def holders(ev: pd.DataFrame, nodes: pd.DataFrame) -> pd.DataFrame:
    """``client, holder, via`` per node with ``client.route`` lines: ``proxy`` when the node is a
    proxy (its role, or a line with ``view`` proxy), ``grpc`` when its latest line's ``source`` is a
    proxy node (``via``: that proxy), else ``client``."""
    lines = _route_lines(ev, "client.route").sort_values(["ts", "seq"], kind="stable")
    proxies = set(nodes.loc[(nodes["role"] == "proxy").to_numpy(bool), "node"])
    if "view" in lines:
        proxies |= set(lines.loc[(lines["view"] == "proxy").fillna(False).to_numpy(bool), "node"])
    last = lines.drop_duplicates("node", keep="last")
    node, source = last["node"].to_numpy(object), last["source"].to_numpy(object)
    is_proxy = np.array([n in proxies for n in node], dtype=bool)
    via_proxy = np.array([x in proxies for x in source], dtype=bool) & ~is_proxy
    holder = np.where(is_proxy, "proxy", np.where(via_proxy, "grpc", "client")).astype(object)
    return pd.DataFrame({"client": node, "holder": holder, "via": np.where(via_proxy, source, None).astype(object)})


def staleness_summary(pieces: pd.DataFrame, intervals: pd.DataFrame, who: str,
                      labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (who, topic): ``measured_ms, stale_ms, stale_over_ms, stale_under_ms, intervals,
    max_ms`` (zeros for a view that was never stale), then the columns of ``labels`` per ``who``
    (:func:`holders`), if given."""
    keys = [who, "topic"]
    dur = pieces[END].to_numpy(float) - pieces[START].to_numpy(float)
    d = pieces[keys].assign(measured_ms=dur, stale_ms=np.where(pieces["stale"].to_numpy(bool), dur, 0.0),
                            stale_over_ms=np.where(pieces["over"].to_numpy(bool), dur, 0.0),
                            stale_under_ms=np.where(pieces["under"].to_numpy(bool), dur, 0.0))
    totals = d.groupby(keys, dropna=False, sort=True).sum().reset_index()
    runs = (intervals.dropna(subset=keys).groupby(keys)
            .agg(intervals=("duration_ms", "size"), max_ms=("duration_ms", "max"))
            .reset_index())
    out = totals.merge(runs, on=keys, how="left")
    out["intervals"] = out["intervals"].fillna(0).astype(np.int64)
    out["max_ms"] = out["max_ms"].fillna(0.0).astype(float)
    out = out[[*keys, "measured_ms", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms"]]
    return out if labels is None else out.merge(labels, on=who, how="left")


def fault_convergence(fault_table: pd.DataFrame, client_intervals: pd.DataFrame) -> pd.DataFrame:
    """``fault_id, fault, start, next_start, converged_ms, stale_views``.

    ``converged_ms``: from the fault's start to the end of the last client stale interval
    overlapping ``[start, next_start)``; 0 if none. ``stale_views`` counts the (client,
    topic) pairs with such an interval. A loop over the (few) faults, vectorized over the
    intervals."""
    f = fault_table[["fault_id", "fault", START, "next_start"]].drop_duplicates().reset_index(drop=True)
    i_start, i_end = client_intervals[START].to_numpy(float), client_intervals[END].to_numpy(float)
    named = client_intervals[["client", "topic"]].notna().all(axis=1).to_numpy()
    pair = client_intervals.groupby(["client", "topic"], sort=False, dropna=False).ngroup().to_numpy() \
        if len(client_intervals) else np.zeros(0, dtype=np.int64)
    conv, views = np.zeros(len(f)), np.zeros(len(f), dtype=np.int64)
    for k, (s, nxt) in enumerate(zip(f[START].to_numpy(float), f["next_start"].to_numpy(float), strict=True)):
        hit = (i_start < nxt) & (i_end > s)
        if hit.any():
            conv[k] = i_end[hit].max() - s
            views[k] = len(np.unique(pair[hit & named]))
    out = f.assign(converged_ms=conv, stale_views=views)
    return out[["fault_id", "fault", START, "next_start", "converged_ms", "stale_views"]]
