"""Ordered sends against the producers' routes (docs/design.md §7 "Order"): which route change
moved which key to another queue (a *remap*), the ordered sends that failed and whether the
producer's route was stale then, and how long each key could not be sent.

A key's queue is ``list[|hash(key)| mod N]`` over the publish list of the route its producer
holds (docs/rocketmq-model.md §3.7), so it moves only when that list changes. A *move* is an
attempt of a key on another queue than the key's previous attempt (ordered attempts in the
order they left: ``ts - latency_ms``, the line being written at the answer); the *route change*
behind it is the producer's latest ``client.route`` for the topic whose publish list differs
from the line before, at or before the attempt left. A change is *stale before* when the
producer's view was stale just before it (the route was catching up with the truth) and *stale
after* when the view it installed was stale (docs/design.md §7 "Views and route staleness").
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from rmqemu.reports.core.availability import measured_attempts, unavailable_windows
from rmqemu.reports.core.schema import EVENTS
from rmqemu.reports.core.sends import END_EPSILON_MS, point_lookup

CHANGE_COLUMNS = ["client", "topic", "ts", "seq", "before", "after", "queues_before", "queues_after"]
REMAP_COLUMNS = ["producer", "topic", "ts", "before", "after", "queues_before", "queues_after", "stale_before",
                 "stale_after", "keys", "out_of_order"]
FAILED_COLUMNS = ["reason", "outcome", "stale", "sends"]
KEY_AVAILABILITY_COLUMNS = ["topic", "keys", "unavailable_keys", "windows", "total_ms", "max_ms"]


def route_changes(ev: pd.DataFrame) -> pd.DataFrame:
    """:data:`CHANGE_COLUMNS`: each ``client.route`` line whose publish list differs from the
    previous line of its (node, topic) (a first line too, ``before`` null); ``before`` and
    ``after`` the sorted broker names, ``queues_*`` the list sizes (``N``)."""
    lines = ev[(ev["kind"] == "client.route").to_numpy(bool)].sort_values(["ts", "seq"], kind="stable")
    queues = pa.array(lines["publish_queues"], type=EVENTS.field("publish_queues").type, from_pandas=True).to_pylist()
    last: dict[tuple, tuple] = {}
    rows = []
    for node, topic, ts, seq, q in zip(lines["node"], lines["topic"], lines["ts"], lines["seq"], queues, strict=True):
        now = tuple((p["broker"], p["queue_id"]) for p in (q or []))
        prev = last.get((node, topic))
        last[(node, topic)] = now
        if prev != now:
            rows.append((node, topic, ts, seq, None if prev is None else _brokers(prev), _brokers(now),
                         None if prev is None else len(prev), len(now)))
    out = pd.DataFrame(rows, columns=CHANGE_COLUMNS)
    return out.astype({"ts": float, "seq": "Int64", "queues_before": "Int64", "queues_after": "Int64"})


def _brokers(queues: tuple) -> tuple:
    return tuple(sorted({p[0] for p in queues if p and p[0] is not None}))


def ordered_attempts(sends: pd.DataFrame) -> pd.DataFrame:
    """Every ordered attempt (a ``sharding_key``) plus ``sent`` (when it left)."""
    att = sends[sends["sharding_key"].notna().to_numpy(bool)].reset_index(drop=True)
    return att.assign(sent=(att["ts"] - att["latency_ms"].fillna(0.0)).to_numpy(float))


def _change_at(df: pd.DataFrame, changes: pd.DataFrame) -> np.ndarray:
    """Per row of ``df`` (``producer, topic, sent``): the ``ts`` of the producer's latest route
    change for the topic at or before ``sent`` (NaN: none)."""
    left = pd.DataFrame({"c": df["producer"].astype(object), "t": df["topic"].astype(object),
                         "at": df["sent"].to_numpy(float), "pos": np.arange(len(df))}).dropna(subset=["c", "t", "at"])
    right = pd.DataFrame({"c": changes["client"].astype(object), "t": changes["topic"].astype(object),
                          "at": changes["ts"].to_numpy(float), "change": changes["ts"].to_numpy(float)}).dropna()
    out = np.full(len(df), np.nan)
    if len(left) and len(right):
        m = pd.merge_asof(left.sort_values("at"), right.sort_values("at"), on="at", by=["c", "t"])
        out[m["pos"].to_numpy()] = m["change"].to_numpy(float)
    return out


def moves(attempts: pd.DataFrame, changes: pd.DataFrame) -> pd.DataFrame:
    """``key, producer, topic, sent, change``: each attempt of a key on another queue than its
    previous attempt, and the route change behind it (``change``: its ``ts``, NaN if none)."""
    a = attempts[attempts["broker"].notna().to_numpy(bool)].sort_values(["sharding_key", "sent", "seq"],
                                                                         kind="stable").reset_index(drop=True)
    same_key = (a["sharding_key"] == a["sharding_key"].shift()).to_numpy(bool)
    queue = (a["topic"].astype(str) + "\0" + a["broker"].astype(str) + "\0" + a["queue_id"].astype(str))
    moved = same_key & (queue != queue.shift()).to_numpy(bool)
    m = a[moved].reset_index(drop=True)
    out = pd.DataFrame({"key": m["sharding_key"], "producer": m["producer"], "topic": m["topic"],
                        "sent": m["sent"].to_numpy(float)})
    return out.assign(change=_change_at(out, changes))


def remap_changes(viol: pd.DataFrame, mv: pd.DataFrame) -> np.ndarray:
    """Per violation: the route change of its key's latest move at or before it was sent
    (NaN: not a remap, or no move found)."""
    out = np.full(len(viol), np.nan)
    pick = np.flatnonzero((viol["cause"] == "remapped").to_numpy(bool) & viol["sent"].notna().to_numpy(bool))
    if len(pick) and len(mv):
        left = pd.DataFrame({"key": viol["unit"].to_numpy(object)[pick], "at": viol["sent"].to_numpy(float)[pick],
                             "pos": pick}).sort_values("at")
        right = pd.DataFrame({"key": mv["key"].astype(object), "at": mv["sent"].to_numpy(float),
                              "change": mv["change"].to_numpy(float)}).sort_values("at")
        m = pd.merge_asof(left, right, on="at", by="key")
        out[m["pos"].to_numpy()] = m["change"].to_numpy(float)
    return out


def _stale(intervals: pd.DataFrame, client: pd.Series, topic: pd.Series, at: np.ndarray) -> np.ndarray:
    found, _ = point_lookup(at, [client.to_numpy(object), topic.to_numpy(object)], intervals, ["client", "topic"])
    return found


def remaps(mv: pd.DataFrame, viol: pd.DataFrame, changes: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """:data:`REMAP_COLUMNS`: each route change that moved a key: the route before and after,
    whether the view was stale just before and right after it, the keys it moved and the
    out-of-order messages it caused (``viol`` with its ``change`` column)."""
    m = mv.dropna(subset=["change"])
    keys = m.groupby(["producer", "topic", "change"], sort=True)["key"].nunique().rename("keys")
    v = viol.dropna(subset=["change"])
    caused = v.groupby(["producer", "topic", "change"])["msg_id"].size().rename("out_of_order")
    out = pd.concat([keys, caused], axis=1).fillna(0).astype(np.int64).reset_index()
    ch = changes.rename(columns={"client": "producer", "ts": "change"}).drop_duplicates(["producer", "topic", "change"])
    out = out.merge(ch, on=["producer", "topic", "change"], how="left").rename(columns={"change": "ts"})
    ts = out["ts"].to_numpy(float)
    out["stale_before"] = _stale(intervals, out["producer"], out["topic"], ts - END_EPSILON_MS)
    out["stale_after"] = _stale(intervals, out["producer"], out["topic"], ts)
    return out[REMAP_COLUMNS].astype({"ts": float})


def failed_sends(attempts: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """:data:`FAILED_COLUMNS`: ordered attempts that were not ok, by misrouting reason (null:
    none; absent when the sends were not classified), outcome, and whether the producer's view
    of the topic was stale when the attempt left."""
    bad = attempts[~(attempts["outcome"] == "ok").fillna(False).to_numpy(bool)].reset_index(drop=True)
    reason = bad["reason"] if "reason" in bad else pd.Series([None] * len(bad), dtype=object)
    df = pd.DataFrame({"reason": reason.astype(object).to_numpy(object), "outcome": bad["outcome"].astype(object),
                       "stale": _stale(intervals, bad["producer"], bad["topic"], bad["sent"].to_numpy(float))})
    if df.empty:
        return pd.DataFrame({c: pd.Series(dtype=np.int64 if c == "sends" else object) for c in FAILED_COLUMNS})
    out = df.groupby(["reason", "outcome", "stale"], dropna=False, sort=True).size().rename("sends").reset_index()
    out = out.astype({"sends": np.int64, "stale": bool})
    out[["reason", "outcome"]] = out[["reason", "outcome"]].astype(object).where(out[["reason", "outcome"]].notna(),
                                                                                 None)
    return out[FAILED_COLUMNS]


def key_availability(attempts: pd.DataFrame, measure_end: float | None) -> pd.DataFrame:
    """:data:`KEY_AVAILABILITY_COLUMNS` per topic: the unavailability windows of docs/design.md
    §9 per sharding key instead of per producer (a key's sends are sequential)."""
    by_key = attempts.assign(producer=attempts["sharding_key"])
    windows = unavailable_windows(by_key, measure_end)
    keys = measured_attempts(by_key, measure_end).groupby("topic", sort=True)["producer"].nunique()
    w = windows.assign(d=windows["end"] - windows["start"]).groupby("topic", sort=True)
    out = pd.DataFrame({"keys": keys, "unavailable_keys": w["producer"].nunique(), "windows": w.size(),
                        "total_ms": w["d"].sum(), "max_ms": w["d"].max()}).fillna(0)
    out = out.rename_axis("topic").reset_index()
    return out.astype({c: np.int64 for c in KEY_AVAILABILITY_COLUMNS[1:4]} | {"total_ms": float, "max_ms": float})[
        KEY_AVAILABILITY_COLUMNS]
