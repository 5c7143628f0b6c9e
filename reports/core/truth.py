"""Ground-truth intervals (alive, paused, partitioned, hosting, truth) of one run, as pandas
tables: the rules are docs/design.md §7, "Ground truth" (tests/core/test_truth.py shows each).
Every table is disjoint per key, so a point lookup finds at most one row; partition links are
kept as unordered pairs ``(a, b)``, ``a <= b``.

The fault table (:func:`faults`) has one row per fault; ``targets`` is a tuple of str (None
where the line had none) and ``params`` stays the events' Arrow struct column (each value
reads as a dict ``{"links": ..., "offset_ms": ...}``; plain dicts are accepted too).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core.intervals import (
    END,
    START,
    compress,
    elementary_segments,
    from_change_points,
    group_codes,
    merge_intervals,
    num,
    ordered,
    overlap_index,
    overlap_pieces,
    sorted_sets,
)
from rmqemu.reports.core.schema import AUTO_CREATE_TOPIC, PERM_INHERIT, PERM_WRITE

FAULT_COLUMNS = ["fault_id", "fault", "targets", "params", "start", "end", "has_end", "next_start"]


def _kind(ev: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    return ev[ev["kind"].isin(kinds).to_numpy(bool)]


def lives(ev: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``node, start, end``: when each node (any role) was alive."""
    marks = _kind(ev, "node.start", "node.exit")[["node", "ts", "seq", "kind"]]
    iv = from_change_points(marks, ["node"], run_end)
    return iv[iv["kind"].to_numpy() == "node.start"][["node", START, END]].reset_index(drop=True)


def exits(ev: pd.DataFrame) -> pd.DataFrame:
    """``node, ts, seq`` of every ``node.exit``."""
    return _kind(ev, "node.exit")[["node", "ts", "seq"]].reset_index(drop=True)


def broker_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """``node, broker, broker_id`` of broker nodes (node table of ``reports.core.frame``);
    a missing ``broker_id`` is 0."""
    keep = (nodes["role"] == "broker").to_numpy(bool) & nodes["broker"].notna().to_numpy()
    out = nodes[keep][["node", "broker", "broker_id"]].reset_index(drop=True)
    out["broker_id"] = out["broker_id"].astype("Int64").fillna(0)
    return out


def _first_per_life(marks: pd.DataFrame, ends: pd.DataFrame, keys: list[str], run_end: float | None) -> pd.DataFrame:
    """``keys, start, end, <marks' other columns>``: from the first row of ``marks`` in each
    life (per ``keys``, which include ``node``) until the life's exit (``ends``: ``node, ts,
    seq``, copied to every key of their node), else ``run_end``. The other columns: their
    first non-null value in the life."""
    stops = ends.dropna(subset=["node"]).merge(marks[keys].drop_duplicates(), on="node")
    both = pd.concat([marks.assign(_exit=False), stops.assign(_exit=True)], ignore_index=True)
    out, gid = ordered(both, keys, ["ts", "seq"])
    ex = out["_exit"].to_numpy(bool)
    life = pd.Series(ex.astype(np.int64)).groupby(gid).cumsum().to_numpy() - ex  # exits before
    ts = out["ts"].to_numpy(float)
    block = group_codes(pd.DataFrame({"g": gid, "l": life}), ["g", "l"])
    extra = [c for c in marks.columns if c not in (*keys, "ts", "seq")]
    res = out.assign(_b=block, _s=np.where(ex, np.nan, ts), _e=np.where(ex, ts, np.nan))
    agg = res.groupby("_b", sort=True).agg(**{k: (k, "first") for k in extra},
                                           _s=("_s", "min"), _e=("_e", "min"))
    head = res.drop_duplicates("_b").set_index("_b")[keys]  # keys may be null: not via first()
    agg = head.join(agg)
    agg[START], agg[END] = agg["_s"], agg["_e"].fillna(num(run_end))
    agg = agg[agg[START].notna().to_numpy() & (agg[END].to_numpy() > agg[START].to_numpy())]
    return agg[[*keys, START, END, *extra]].reset_index(drop=True)


def _topic_lines(ev: pd.DataFrame, nodes: pd.DataFrame) -> pd.DataFrame:
    """``broker.topic`` lines with broker name/id filled from the node table if absent."""
    lines = _kind(ev, "broker.topic")
    bn = broker_nodes(nodes).rename(columns={"broker": "_b", "broker_id": "_bid"})
    bn = bn.dropna(subset=["node"]).drop_duplicates("node")
    lines = lines.merge(bn, on="node", how="left")
    lines["broker"] = lines["broker"].where(lines["broker"].notna(), lines["_b"])
    lines["broker_id"] = lines["broker_id"].astype("Int64").fillna(lines["_bid"].astype("Int64")).fillna(0)
    return lines.drop(columns=["_b", "_bid"])


def _perm_has(lines: pd.DataFrame, bits: int) -> np.ndarray:
    perm = lines["perm"].astype("Int64")
    return ((perm & bits) == bits).fillna(False).to_numpy(bool)


def hosts(ev: pd.DataFrame, nodes: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``node, topic, start, end, broker, broker_id``: a broker node hosting a topic. A DLedger
    peer's ``broker_id`` moves with elections: its hosting is cut at each ``broker.role`` and
    takes that line's id (none before its first: it is no master then)."""
    lines = _topic_lines(ev, nodes)
    marks = lines[_perm_has(lines, PERM_WRITE)][["node", "topic", "ts", "seq", "broker", "broker_id"]]
    iv = _first_per_life(marks, exits(ev), ["node", "topic"], run_end)
    roles = role_ids(ev, run_end)
    if roles.empty:
        return iv
    peer = iv["node"].isin(roles["node"]).to_numpy(bool)
    moved = overlap_pieces(iv[peer].drop(columns="broker_id"), roles, ["node"])
    return pd.concat([iv[~peer], moved[iv.columns]], ignore_index=True)


def role_ids(ev: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``node, broker_id, start, end``: a DLedger peer's brokerId from each ``broker.role`` line
    until the next or the node's exit."""
    lines = _kind(ev, "broker.role")[["node", "ts", "seq", "broker_id"]]
    stops = exits(ev).dropna(subset=["node"])
    stops = stops[stops["node"].isin(lines["node"]).to_numpy(bool)]
    both = pd.concat([lines.assign(_exit=False), stops.assign(_exit=True, broker_id=-1)], ignore_index=True)
    iv = from_change_points(both, ["node"], run_end)
    iv = iv[~iv["_exit"].to_numpy(bool)]
    return iv[["node", "broker_id", START, END]].reset_index(drop=True)


def autocreate(ev: pd.DataFrame, nodes: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``node, start, end``: the node hosts ``TBW102`` (write bit) with the inherit bit."""
    lines = _topic_lines(ev, nodes)
    keep = _perm_has(lines, PERM_WRITE | PERM_INHERIT) & (lines["topic"] == AUTO_CREATE_TOPIC).to_numpy(bool)
    return _first_per_life(lines[keep][["node", "ts", "seq"]], exits(ev), ["node"], run_end)


def write_queues(ev: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``node, topic, write_queues, start, end``: the latest ``broker.topic`` of a topic on a
    node (any perm), until the next one or the node's exit."""
    lines = _kind(ev, "broker.topic")[["node", "topic", "ts", "seq", "write_queues"]]
    stops = exits(ev).dropna(subset=["node"]).merge(lines[["node", "topic"]].drop_duplicates(), on="node")
    both = pd.concat([lines.assign(_exit=False), stops.assign(_exit=True)], ignore_index=True)
    iv = from_change_points(both, ["node", "topic"], run_end)
    iv = iv[~iv["_exit"].to_numpy(bool)]
    return iv[["node", "topic", "write_queues", START, END]].reset_index(drop=True)


def _items(value: Any) -> list[Any]:
    """A list-like cell as a list; null: empty (as Spark's ``explode`` skips it)."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return []
    return list(value)


def faults(ev: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``fault_id, fault, targets, params, start, end, has_end, next_start``: one row per
    fault. ``end`` is the ``fault.end`` time or the run end; ``next_start`` is the next
    fault's ``fault.start`` strictly later than this one (faults starting together share a
    convergence window), else the run end. ``fault``/``targets``/``params``: of the fault's
    earliest ``fault.start`` line."""
    first, _ = ordered(_kind(ev, "fault.start"), [], ["ts", "seq"])
    out = first.drop_duplicates("fault_id")[["fault_id", "fault", "targets", "params", "ts"]]
    out = out.rename(columns={"ts": START}).reset_index(drop=True)
    out["targets"] = pd.Series([None if v is None or v is pd.NA else tuple(v) for v in out["targets"]],
                               dtype=object, index=out.index)
    fend = _kind(ev, "fault.end").dropna(subset=["fault_id"]).groupby("fault_id")["ts"].min()
    ends = out["fault_id"].map(fend).to_numpy(float)
    out[END] = np.where(np.isnan(ends), num(run_end), ends)
    out["has_end"] = ~np.isnan(ends)
    times = np.unique(out[START].to_numpy(float))
    k = np.searchsorted(times, out[START].to_numpy(float), side="right")
    nxt = np.where(k < len(times), times[np.minimum(k, len(times) - 1)], num(run_end))
    out["next_start"] = np.where(out["fault_id"].isna().to_numpy(), num(run_end), nxt)  # Spark: joined on fault_id
    return out[FAULT_COLUMNS]


def _explode_targets(fl: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """``cols`` of the (few) fault rows, one row per target, as ``node``."""
    rows = [(*vals, t) for *vals, targets in fl[[*cols, "targets"]].itertuples(index=False)
            for t in _items(targets)]
    return pd.DataFrame(rows, columns=[*cols, "node"])


def pauses(fault_table: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``node, start, end``: merged paused intervals (see the module docstring), from the
    :func:`faults` table."""
    fl = fault_table
    p = _explode_targets(fl[(fl["fault"] == "pause").to_numpy(bool)], ["fault_id", "start", "end", "has_end"])
    p = p.astype({START: float, END: float})
    p["fend"] = p[END].where(p["has_end"].astype(bool))
    res = _explode_targets(fl[(fl["fault"] == "resume").to_numpy(bool)], ["start"]).rename(columns={"start": "r"})
    res = res.dropna(subset=["node"])
    p = p[["fault_id", "node", "start", "fend"]].drop_duplicates()
    j = p.merge(res, on="node", how="left")
    j["r"] = j["r"].where(j["r"] > j["start"])
    first_r = j.groupby(["fault_id", "node", "start", "fend"], dropna=False, sort=False)["r"].min()
    p = p.merge(first_r.reset_index(), on=["fault_id", "node", "start", "fend"], how="left")
    p[END] = p["fend"].fillna(p["r"].astype(float)).fillna(num(run_end))
    p = p[p[END].to_numpy(float) > p[START].to_numpy(float)]
    return merge_intervals(p[["node", START, END]].astype({START: float, END: float}), ["node"])


def _links(params: Any) -> list[Any]:
    return _items(params.get("links")) if isinstance(params, dict) else []


def partitions(fault_table: pd.DataFrame) -> pd.DataFrame:
    """``a, b, start, end``: the link between nodes ``a <= b`` is blocked (either way)."""
    fl = fault_table[(fault_table["fault"] == "partition").to_numpy(bool)]
    rows = []
    for params, start, end in fl[["params", START, END]].itertuples(index=False):
        for link in _links(params):
            pair = _items(link)
            if len(pair) >= 2:
                x = [v for v in pair[:2] if v is not None]  # least/greatest skip nulls
                rows.append((min(x) if x else None, max(x) if x else None, start, end))
    pairs = pd.DataFrame(rows, columns=["a", "b", START, END]).astype({START: float, END: float})
    return merge_intervals(pairs[pairs[END] > pairs[START]], ["a", "b"])


def truth(host_iv: pd.DataFrame, pause_iv: pd.DataFrame, topics: Iterable[str | None],
          run_start: float | None, run_end: float | None, life_iv: pd.DataFrame | None = None) -> pd.DataFrame:
    """``topic, start, end, brokers``: the sorted broker names (a tuple) whose master
    (``broker_id`` 0) is alive, not paused and hosts the topic. Covers ``[run_start, run_end)``
    for every topic in ``topics`` (``()`` where none does); adjacent equal sets are merged.

    ``life_iv`` (:func:`lives`): hosting counts only inside a life of the master, so a
    ``broker.topic`` line logged before the node's ``node.start`` (a restore) or by a node
    that never started does not make it part of truth."""
    is_master = (host_iv["broker_id"].astype("Int64") == 0).fillna(False).to_numpy(bool)
    masters = host_iv[is_master][["node", "topic", "broker", START, END]].reset_index(drop=True)
    if life_iv is not None:
        masters = overlap_pieces(masters, life_iv[["node", START, END]], ["node"])[
            ["node", "topic", "broker", START, END]]
    mpause = pause_iv[["node", START, END]].dropna(subset=["node"]).merge(
        masters[["node", "topic"]].drop_duplicates(), on="node")
    lo, hi = num(run_start), num(run_end)
    edge = pd.Series(list(dict.fromkeys(topics)), dtype=object)
    bounds = pd.concat([pd.DataFrame({"topic": df["topic"], "t": df[c]})
                        for df in (masters, mpause) for c in (START, END)]
                       + [pd.DataFrame({"topic": edge, "t": t}) for t in (lo, hi)], ignore_index=True)
    bounds = bounds[(bounds["t"] >= lo).to_numpy(bool) & (bounds["t"] <= hi).to_numpy(bool)]
    segs = elementary_segments(bounds.astype({"t": float}), ["topic"])
    s, h = _covered(segs, masters, ["topic"])
    present = pd.DataFrame({"seg": s, "node": masters["node"].to_numpy(object)[h],
                            "broker": masters["broker"].to_numpy(object)[h],
                            START: segs[START].to_numpy(float)[s], END: segs[END].to_numpy(float)[s]})
    x, _ = _covered(present, pause_iv, ["node"])
    present = present.drop(index=np.unique(x)).dropna(subset=["broker"])
    segs["brokers"] = sorted_sets(present["seg"].to_numpy(), present["broker"].to_numpy(object),
                                  len(segs)).to_numpy(object)
    return compress(segs, ["topic"], "brokers")[["topic", START, END, "brokers"]]


def _covered(inner: pd.DataFrame, outer: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(i, j)`` where ``outer``'s interval j contains ``inner``'s interval i."""
    i, j = overlap_index(inner, outer, keys)
    ok = ((outer[START].to_numpy(float)[j] <= inner[START].to_numpy(float)[i])
          & (outer[END].to_numpy(float)[j] >= inner[END].to_numpy(float)[i]))
    return i[ok], j[ok]
