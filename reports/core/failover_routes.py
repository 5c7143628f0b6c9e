"""Route staleness caused by a moving master (docs/design.md §7 "DLedger failovers"): when each
namesrv's table, then each client's route, showed a failover's new master.

A namesrv shows it by an ``ns.broker`` ``register`` of the group with broker_id 0 at the new
leader's address, else by an ``ns.route`` of one of the group's topics that gives the group a
master again. ``client.route`` names no address: a client shows it by the first route of one of
the group's topics it applied from a namesrv that showed it by then (the line's ``source``).

:func:`route_lines` is the node step's part (a node's own ``client.route`` and ``ns.route``
lines, their brokers as tuples); the rest runs on the run's combined tables.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core.intervals import sorted_sets
from rmqemu.reports.core.schema import EVENTS

#: The columns of :func:`route_lines`.
ROUTE_COLUMNS: tuple[str, ...] = ("kind", "node", "topic", "ts", "seq", "source", "brokers", "masters")
#: The columns of :func:`views`.
VIEW_COLUMNS: tuple[str, ...] = ("group", "term", "who", "node", "by", "seen", "stale_ms")


def _names(column: pd.Series, field: str, n: int) -> pd.Series:
    """Per row of a list-of-structs column: the sorted distinct ``broker`` names (or, for a list of
    strings, its items) as a tuple."""
    arr = pa.array(column, type=EVENTS.field(field).type, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    flat = pc.list_flatten(arr)
    names = pc.struct_field(flat, "broker") if pa.types.is_struct(flat.type) else flat
    rows = pc.list_parent_indices(arr).to_numpy(zero_copy_only=False).astype(np.int64)
    return sorted_sets(rows, names.to_numpy(zero_copy_only=False), n)


def route_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """:data:`ROUTE_COLUMNS` of a node share's ``client.route`` lines (``brokers``: of the publish
    queues) and ``ns.route`` lines (``brokers``: of the queue datas; ``masters``)."""
    parts = []
    for kind, field in (("client.route", "publish_queues"), ("ns.route", "queue_datas")):
        mine = ev.loc[(ev["kind"] == kind).to_numpy(bool)].reset_index(drop=True)
        out = mine[["kind", "node", "topic", "ts", "seq", "source"]].copy()
        out["brokers"] = _names(mine[field], field, len(mine)).to_numpy(object)
        out["masters"] = (_names(mine["masters"], "masters", len(mine)).to_numpy(object) if kind == "ns.route"
                          else pd.Series([()] * len(mine), dtype=object).to_numpy(object))
        parts.append(out)
    out = pd.concat(parts, ignore_index=True)
    return out.astype({"brokers": object, "masters": object})[list(ROUTE_COLUMNS)]


def _has(values: pd.Series, name: str) -> np.ndarray:
    return np.array([name in v if isinstance(v, tuple) else False for v in values], dtype=bool)


def topics_of(routes: pd.DataFrame, group: str) -> set[str]:
    """The topics a route ever gave ``group`` queues of (a namesrv's or a client's)."""
    return set(routes.loc[_has(routes["brokers"], group), "topic"].dropna())


def _regains(ns: pd.DataFrame, group: str) -> pd.DataFrame:
    """``node, ts``: the ``ns.route`` lines that list ``group`` in ``masters`` when the namesrv's
    line before, for the topic, did not (its first line: none before)."""
    ns = ns.sort_values(["node", "topic", "ts", "seq"], kind="stable")
    has = _has(ns["masters"], group)
    same = (ns["node"].to_numpy(object)[1:] == ns["node"].to_numpy(object)[:-1]) & \
        (ns["topic"].to_numpy(object)[1:] == ns["topic"].to_numpy(object)[:-1])
    before = np.r_[False, has[:-1] & same] if len(ns) else has
    return ns.loc[has & ~before, ["node", "ts"]]


def views(fo: pd.DataFrame, dl: pd.DataFrame, routes: pd.DataFrame, addresses: pd.DataFrame,
          namesrvs: list[str]) -> pd.DataFrame:
    """:data:`VIEW_COLUMNS`: per failover (``group, term``), each namesrv's and then each client's
    ``seen`` (NaN: not in the failover's window ``[elected, bound)``), ``by`` (the kind of line
    that showed it) and ``stale_ms`` (from ``stopped`` to ``seen``, else to ``bound``). The
    clients: those with a ``client.route`` of one of the group's topics before ``bound``."""
    shown = dl["change"].isin(["register", "role"]).to_numpy(bool)  # new to it, or a live follower moved to id 0
    regs = dl.loc[(dl["kind"] == "ns.broker").to_numpy(bool) & shown
                  & (dl["broker_id"] == 0).fillna(False).to_numpy(bool)]
    cr = routes.loc[(routes["kind"] == "client.route").to_numpy(bool)]
    nr = routes.loc[(routes["kind"] == "ns.route").to_numpy(bool)]
    rows = []
    for f in fo.itertuples():
        topics = topics_of(routes, f.group)
        addrs = set(addresses.loc[(addresses["node"] == f.node).to_numpy(bool), "addr"])
        mine = regs[(regs["broker"] == f.group).fillna(False).to_numpy(bool) & regs["broker_addr"].isin(addrs)]
        regain = _regains(nr[nr["topic"].isin(topics).to_numpy(bool)], f.group)
        seen_by: dict[str, float] = {}
        for n in namesrvs:
            for by, got in (("ns.broker", mine), ("ns.route", regain)):
                t = got.loc[(got["node"] == n).to_numpy(bool), "ts"].to_numpy(float)
                t = t[(t >= f.elected) & (t < f.bound)]
                if len(t):
                    seen_by[n] = float(t.min())
                    rows.append((f.group, f.term, "namesrv", n, by, seen_by[n], f.stopped, f.bound))
                    break
            else:
                rows.append((f.group, f.term, "namesrv", n, None, np.nan, f.stopped, f.bound))
        lines = cr[cr["topic"].isin(topics).to_numpy(bool)]
        for client in sorted(set(lines.loc[(lines["ts"] < f.bound).to_numpy(bool), "node"].dropna())):
            own = lines[(lines["node"] == client).to_numpy(bool)]
            t = own["ts"].to_numpy(float)
            shown = np.array([s in seen_by and ts >= seen_by[s] for s, ts in zip(own["source"], t, strict=True)],
                             dtype=bool) & (t >= f.elected) & (t < f.bound)
            seen = float(t[shown].min()) if shown.any() else np.nan
            rows.append((f.group, f.term, "client", client, "client.route" if shown.any() else None, seen,
                         f.stopped, f.bound))
    out = pd.DataFrame(rows, columns=[*VIEW_COLUMNS[:-1], "stopped", "bound"])
    out = out.astype({"seen": float, "stopped": float, "bound": float})
    seen = out["seen"].to_numpy(float)
    out["stale_ms"] = np.where(np.isnan(seen), out["bound"].to_numpy(float), seen) - out["stopped"].to_numpy(float)
    return out[list(VIEW_COLUMNS)]
