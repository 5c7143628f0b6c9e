"""What a failover cost the clients (docs/design.md §7 "DLedger failovers"): sends to the old
master's address, each producer's recovery time, messages stored twice by a retried send that
was committed anyway, and messages a consumer group got again from the same place after a
failover (consumer offsets are not replicated by DLedger).

Each function loops over the (few) failovers and works on the run's sends or deliveries with
numpy masks. ``sends``: the send-attempt table (:func:`reports.core.sends.sends`, with
``broker_addr``); ``fo``: the failovers (:func:`reports.core.failover.failovers`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core.availability import measured_attempts
from rmqemu.reports.core.retries import is_broker_made
from rmqemu.reports.core.schema import EVENTS

#: What a send to the old master got, first match wins: an ok answer, no answer in time, a refused
#: connection (CONNECT_BROKER_EXCEPTION 10001), SERVICE_NOT_AVAILABLE (14: a demoted master),
#: SYSTEM_ERROR (1: a peer not leading, or a quorum ack that timed out), anything else.
GOT: tuple[str, ...] = ("ok", "timeout", "refused", "not_available", "system_error", "other")
CONNECT_BROKER_EXCEPTION, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR = 10001, 14, 1

STALE_COLUMNS: tuple[str, ...] = ("group", "term", "producer", "ts", "got")
RTO_COLUMNS: tuple[str, ...] = ("group", "term", "producer", "failed", "recovered", "rto_ms")
PAIR_COLUMNS: tuple[str, ...] = ("consumer_group", "msg_id", "group", "term")


def got(sends: pd.DataFrame) -> np.ndarray:
    """Per attempt: its :data:`GOT` class."""
    outcome, code = sends["outcome"], sends["code"].astype("Int64")
    conds = [(outcome == "ok").fillna(False), (outcome == "timeout").fillna(False),
             (code == CONNECT_BROKER_EXCEPTION).fillna(False), (code == SERVICE_NOT_AVAILABLE).fillna(False),
             (code == SYSTEM_ERROR).fillna(False)]
    return np.select([c.to_numpy(bool) for c in conds], list(GOT[:-1]), GOT[-1]).astype(object)


def _in(ts: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (ts >= lo) & (ts < hi)


def stale_master_sends(sends: pd.DataFrame, fo: pd.DataFrame, addresses: pd.DataFrame) -> pd.DataFrame:
    """:data:`STALE_COLUMNS`: attempts to a failover's group, in its window ``[stopped, bound)``, at
    an address of the old leader's node (when the group re-elected that node: only before its broker
    took brokerId 0 again)."""
    ts, addr = sends["ts"].to_numpy(float), sends["broker_addr"]
    parts = []
    for f in fo.itertuples():
        old = set(addresses.loc[(addresses["node"] == f.old_node).to_numpy(bool), "addr"])
        hit = (sends["broker"] == f.group).fillna(False).to_numpy(bool) & addr.isin(old).to_numpy(bool) & \
            _in(ts, f.stopped, f.bound)
        if f.node == f.old_node and not np.isnan(f.master):
            hit &= ts < f.master
        mine = sends[hit]
        parts.append(pd.DataFrame({"group": f.group, "term": f.term, "producer": mine["producer"].to_numpy(object),
                                   "ts": mine["ts"].to_numpy(float), "got": got(mine)}))
    empty = pd.DataFrame({c: pd.Series(dtype=float if c == "ts" else object) for c in STALE_COLUMNS})
    return pd.concat([empty, *parts], ignore_index=True)[list(STALE_COLUMNS)]


def rto(sends: pd.DataFrame, fo: pd.DataFrame, measure_end: float) -> pd.DataFrame:
    """:data:`RTO_COLUMNS`: per failover and producer with a failed attempt to the group in the
    failover's window: the first such attempt, the producer's next ok attempt to the group after it
    (NaN: none by ``measure_end``) and the time between (to ``measure_end`` without one), as
    openchaos measures a recovery. Attempts of the measured run that expect an answer."""
    att = measured_attempts(sends, measure_end, ["producer", "broker", "ts", "seq", "outcome"])
    att = att.sort_values(["ts", "seq"], kind="stable", na_position="first")
    rows = []
    for f in fo.itertuples():
        mine = att[(att["broker"] == f.group).fillna(False).to_numpy(bool)]
        ts, ok = mine["ts"].to_numpy(float), mine["ok"].to_numpy(bool)
        failed = ~ok & _in(ts, f.stopped, f.bound)
        for producer in pd.unique(mine["producer"].to_numpy(object)[failed]):
            if not isinstance(producer, str):
                continue  # a null key matches nothing (docs/design.md §7 "Conventions")
            own = (mine["producer"] == producer).fillna(False).to_numpy(bool)
            first = np.flatnonzero(own & failed)[0]
            later = np.flatnonzero(own & ok & (np.arange(len(mine)) > first))
            back = float(ts[later[0]]) if len(later) else np.nan
            rows.append((f.group, f.term, producer, float(ts[first]), back,
                         (measure_end if np.isnan(back) else back) - float(ts[first])))
    out = pd.DataFrame(rows, columns=list(RTO_COLUMNS))
    return out.astype({"failed": float, "recovered": float, "rto_ms": float})


def deliveries(consumer_lines: pd.DataFrame, unheld: np.ndarray) -> pd.DataFrame:
    """``consumer_group, topic, broker, queue_id, offset, msg_id, ts``: one row per message a
    ``consume`` line lists (``offset`` -1 where the line has no offsets for it), leaving out the
    unheld lines (:attr:`reports.core.order_run.OrderRun.unheld_lines`) and retries' topics."""
    keep = (consumer_lines["kind"] == "consume").to_numpy(bool) & ~np.asarray(unheld, dtype=bool)
    con = consumer_lines[keep]
    con = con[~is_broker_made(con["topic"])].reset_index(drop=True)
    ids = pa.array(con["msg_ids"], type=EVENTS.field("msg_ids").type, from_pandas=True)
    offs = pa.array(con["offsets"], type=EVENTS.field("offsets").type, from_pandas=True)
    rows = pc.list_parent_indices(ids).to_numpy(zero_copy_only=False).astype(np.int64)
    aligned = (pc.fill_null(pc.list_value_length(offs), -1).to_numpy(zero_copy_only=False)
               == pc.fill_null(pc.list_value_length(ids), -2).to_numpy(zero_copy_only=False))
    off = np.full(len(rows), -1, dtype=np.int64)
    at = aligned[rows]
    if at.any():
        flat = pc.fill_null(pc.list_flatten(offs.filter(pa.array(aligned))), -1).to_numpy(zero_copy_only=False)
        off[at] = flat
    out = con.iloc[rows][["group", "topic", "broker", "queue_id", "ts"]].reset_index(drop=True)
    out = out.rename(columns={"group": "consumer_group"})
    out["offset"] = off
    out["msg_id"] = pc.list_flatten(ids).to_numpy(zero_copy_only=False).astype(object)
    return out.dropna(subset=["consumer_group", "msg_id"])


def _window(fo: pd.DataFrame, group: str, t: float) -> object:
    """The term of the failover of ``group`` whose window holds ``t``, else None."""
    mine = fo[(fo["group"] == group).to_numpy(bool)]
    at = mine[(mine["stopped"].to_numpy(float) <= t) & (t < mine["bound"].to_numpy(float))]
    return at["term"].iloc[0] if len(at) else None


def duplicates(sends: pd.DataFrame, dl: pd.DataFrame, fo: pd.DataFrame, groups: set[str]) -> pd.DataFrame:
    """:data:`PAIR_COLUMNS`: (consumer group, message) pairs the group consumed from two or more
    places (broker, queue, offset), the message having a failed attempt to a DLedger ``group``
    that timed out or got SYSTEM_ERROR and a later attempt: a retry of a send committed anyway.
    ``term``: the failover whose window holds that failed attempt (None: none)."""
    s = sends.sort_values(["ts", "seq"], kind="stable").reset_index(drop=True)
    kinds = got(s)
    failed = s["broker"].isin(groups).to_numpy(bool) & np.isin(kinds, ("timeout", "system_error"))
    last = s.groupby("msg_id", sort=False)["seq"].transform("max").to_numpy(float)
    retried = failed & (s["seq"].to_numpy(float) < last)
    cause = s[retried].drop_duplicates("msg_id")[["msg_id", "broker", "ts"]]
    d = dl[dl["msg_id"].isin(cause["msg_id"]).to_numpy(bool)]
    places = d.drop_duplicates(["consumer_group", "msg_id", "broker", "queue_id", "offset"])
    n = places.groupby(["consumer_group", "msg_id"], sort=True).size()
    pairs = n[n > 1].reset_index()[["consumer_group", "msg_id"]].merge(cause, on="msg_id")
    terms = [_window(fo, g, t) for g, t in zip(pairs["broker"], pairs["ts"], strict=True)]
    return pd.DataFrame({"consumer_group": pairs["consumer_group"].to_numpy(object),
                         "msg_id": pairs["msg_id"].to_numpy(object), "group": pairs["broker"].to_numpy(object),
                         "term": pd.Series(terms, dtype=object).to_numpy(object)})


def reconsumed(dl: pd.DataFrame, fo: pd.DataFrame) -> pd.DataFrame:
    """:data:`PAIR_COLUMNS`: (consumer group, message) pairs delivered again from the same place on a
    DLedger group after one of its failovers stopped the old leader between the two deliveries
    (``term``: the latest such failover)."""
    d = dl[dl["broker"].isin(fo["group"]).to_numpy(bool)].sort_values("ts", kind="stable")
    key = ["consumer_group", "msg_id", "broker", "queue_id", "offset"]
    prev = d.groupby(key, sort=False, dropna=False)["ts"].shift(1).to_numpy(float)
    again = d.assign(prev=prev)[~np.isnan(prev)]
    rows = []
    for r in again.itertuples():
        mine = fo[(fo["group"] == r.broker).to_numpy(bool)]
        hit = mine[(mine["stopped"].to_numpy(float) > r.prev) & (mine["stopped"].to_numpy(float) <= r.ts)]
        if len(hit):
            rows.append((r.consumer_group, r.msg_id, r.broker, hit["term"].iloc[-1]))
    out = pd.DataFrame(rows, columns=list(PAIR_COLUMNS)).astype(object)
    return out.drop_duplicates(["consumer_group", "msg_id"]).reset_index(drop=True)
