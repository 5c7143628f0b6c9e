"""The order checker (docs/design.md §7 "Order"): per consumer group and sharding key, the acked
ordered messages in send order against their first consumptions; per queue, in queue-offset
order, for what an orderly group consumed without a known key (a real client's messages).

A group is *orderly* when one of its ``consume`` lines says ``orderly`` or it took a queue lock
(a ``broker.lock`` line names it). A message is *out of order* when its first consumption by the
group comes before the first consumption of an earlier message of its key (earlier: acked before
it, in its producer's log order; per queue: a smaller offset); a *duplicate* when the group
consumed it more than once. Each violation has one cause, first match wins:

1. ``remapped`` (out of order, by key): the earlier message was sent to another queue;
2. ``handover``: the two consumptions (of the message and the earlier one; of a duplicate, its
   first two) were made by two consumers whose holds of the queue overlapped
   (:mod:`reports.core.order_locks`);
3. ``redelivery``: anything else (the same consumer again, a consumer that took the queue over
   after the other let it go, a retry through ``%RETRY%<group>``).

The earlier message an out-of-order one is judged against is, of the key's earlier messages, the
one consumed last. Deliveries are ordered by ``ts``, then read order, then place in the line. A
real client's delivery from a queue it held no lock on is left out and counted ``unheld``
(:func:`reports.core.order_locks.unheld`, per ``consume`` line:
:attr:`reports.core.order_run.OrderRun.unheld_lines`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core.consumers import subscriptions
from rmqemu.reports.core.order_locks import BROKER_LOCK, QUEUE, handover

CAUSES: tuple[str, ...] = ("remapped", "handover", "redelivery")
BY_KEY, BY_QUEUE = "key", "queue"
OUT_OF_ORDER, DUPLICATE = "out_of_order", "duplicate"
VIOLATION_COLUMNS = ["group", "by", "unit", "msg_id", "violation", "cause", "ts", "earlier", "producer", "topic",
                     "sent"]
SUMMARY_COLUMNS = ["group", "by", "units", "violated", "messages", "consumed", "out_of_order", "duplicates", *CAUSES,
                   "unheld"]
_DELIVERY = ["node", "ts", "order", *QUEUE]


def orderly_groups(consumes: pd.DataFrame, locks: pd.DataFrame) -> list[str]:
    """The groups that consumed orderly (module docstring), sorted."""
    said = consumes.loc[consumes["orderly"].fillna(False).astype(bool).to_numpy(bool), "group"]
    locked = locks.loc[(locks["kind"] == BROKER_LOCK).to_numpy(bool), "group"]
    return sorted(set(pd.concat([said, locked]).dropna()))


def _lists(col: pd.Series, item: pa.DataType) -> tuple[np.ndarray, np.ndarray]:
    """``(flat values, parent row of each)`` of a list column (null: empty), in row order."""
    arr = pa.array(col, type=pa.list_(item), from_pandas=True)
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    return (pc.list_flatten(arr).to_numpy(zero_copy_only=False),
            pc.list_parent_indices(arr).to_numpy(zero_copy_only=False).astype(np.int64))


def deliveries(consumes: pd.DataFrame, groups: list[str]) -> pd.DataFrame:
    """``group, node, ts, topic, broker, queue_id, msg_id, offset, order, line``: one row per
    message a ``consume`` line of ``groups`` lists (``offset``: null when the line has none for
    it), in delivery order, which ``order`` numbers; ``line``: the line's position in
    ``consumes``."""
    keep = np.flatnonzero((consumes["kind"] == "consume").to_numpy(bool)
                          & consumes["group"].isin(groups).to_numpy(bool))
    c = consumes.iloc[keep].assign(line=keep).sort_values(["ts", "seq"], kind="stable").reset_index(drop=True)
    ids, parent = _lists(c["msg_ids"], pa.string())
    offs, o_parent = _lists(c["offsets"], pa.int64())
    # a line's offsets name its messages when it has one per message (both lists in line order)
    aligned = np.bincount(parent, minlength=len(c)) == np.bincount(o_parent, minlength=len(c))
    offset = pd.array([None] * len(ids), dtype="Int64")
    offset[aligned[parent]] = offs[aligned[o_parent]]
    out = c.iloc[parent][["group", "node", "ts", *QUEUE]].reset_index(drop=True)
    out["msg_id"] = pd.Series(ids, dtype=object)
    out["offset"] = offset
    out["order"] = np.arange(len(out), dtype=np.int64)
    out["line"] = c["line"].to_numpy(np.int64)[parent]
    return out


def ordered_acks(sends: pd.DataFrame) -> pd.DataFrame:
    """``producer, key, topic, msg_id, ts, seq, broker, queue_id, sent``: each ordered message's
    (a ``send`` with a ``sharding_key``) first ok attempt; ``sent``: when it left (``ts`` minus
    its latency: the line is written at the answer)."""
    ok = sends[sends["sharding_key"].notna().to_numpy(bool) & (sends["outcome"] == "ok").fillna(False).to_numpy(bool)
               & sends["msg_id"].notna().to_numpy(bool)]
    ok = ok.sort_values(["ts", "seq"], kind="stable").drop_duplicates("msg_id")
    out = ok.rename(columns={"sharding_key": "key"})[["producer", "key", "topic", "msg_id", "ts", "seq", "broker",
                                                       "queue_id"]].reset_index(drop=True)
    out["sent"] = (ok["ts"] - ok["latency_ms"].fillna(0.0)).to_numpy(float)
    return out


def _first_two(dl: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys`` (``dl`` in delivery order): ``n`` deliveries, the first's columns as
    ``f_*``, the second's as ``s_*`` (null when there is none)."""
    nth = dl.groupby(keys, sort=False, dropna=False).cumcount().to_numpy()

    def nth_delivery(k: int, prefix: str) -> pd.DataFrame:
        rows = dl[nth == k]
        return rows[keys].assign(**{prefix + c: rows[c].to_numpy() for c in [*_DELIVERY, "msg_id"]})
    counts = dl.groupby(keys, sort=False, dropna=False).size().rename("n").reset_index()
    out = nth_delivery(0, "f_").merge(counts, on=keys, how="left")
    return out.merge(nth_delivery(1, "s_"), on=keys, how="left").drop(columns=["s_msg_id"])


def key_sequences(acks: pd.DataFrame, dl: pd.DataFrame, consumer_lines: pd.DataFrame,
                  groups: list[str]) -> pd.DataFrame:
    """Per (orderly group, key): every acked ordered message of a topic the group subscribes, in
    send order (``pos``), with its first two deliveries to the group (any topic: a retry keeps
    the id)."""
    subs = subscriptions(consumer_lines)
    e = acks.merge(subs[subs["group"].isin(groups)], on="topic")
    e = e.sort_values(["group", "key", "ts", "seq"], kind="stable").reset_index(drop=True)
    e = e.rename(columns={"key": "unit", "broker": "send_broker", "queue_id": "send_queue"})
    e = e.merge(_first_two(dl[dl["msg_id"].isin(e["msg_id"])], ["group", "msg_id"]), on=["group", "msg_id"],
                how="left", sort=False)
    return e.assign(by=BY_KEY, pos=np.arange(len(e), dtype=float), n=e["n"].fillna(0).astype(np.int64))


def queue_sequences(dl: pd.DataFrame, keyed: pd.DataFrame) -> pd.DataFrame:
    """Per (orderly group, queue): the delivered offsets of messages :func:`key_sequences` does
    not check, in offset order (``pos``), with their first two deliveries."""
    known = dl.merge(keyed[["group", "msg_id"]].drop_duplicates(), how="left", indicator=True)["_merge"] == "both"
    rest = dl[~known.to_numpy(bool) & dl["offset"].notna().to_numpy(bool)]
    out = _first_two(rest, ["group", *QUEUE, "offset"])
    out = out.sort_values(["group", *QUEUE, "offset"], kind="stable").reset_index(drop=True)
    unit = out["topic"].astype(str) + ":" + out["broker"].astype(str) + ":" + out["queue_id"].astype(str)
    return out.assign(by=BY_QUEUE, unit=unit, msg_id=out["f_msg_id"], pos=out["offset"].astype(float),
                      producer=None, send_broker=None, send_queue=pd.NA, sent=np.nan)


def _delivery(seq: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return pd.DataFrame({c: seq[prefix + c].to_numpy(object if c in ("node", *QUEUE) else float)
                         for c in ("node", "ts", *QUEUE)})


def violations(seqs: pd.DataFrame, held: pd.DataFrame) -> pd.DataFrame:
    """One row per violation (:data:`VIOLATION_COLUMNS`): ``violation`` out_of_order or
    duplicate, its ``cause``, ``ts`` the consumption at fault (a duplicate's second),
    ``earlier`` the message an out-of-order one overtook; ``sent``: when it was sent."""
    s = seqs[seqs["n"].to_numpy() > 0].sort_values(["group", "by", "unit", "pos"], kind="stable")
    s = s.reset_index(drop=True)
    gid = s.groupby(["group", "by", "unit"], sort=False).ngroup().to_numpy() if len(s) else np.zeros(0, int)
    f = s["f_order"].to_numpy(float)
    most = pd.Series(f).groupby(gid).cummax().to_numpy(float)
    at = pd.Series(np.where(f == most, np.arange(len(s), dtype=float), np.nan)).groupby(gid).ffill().to_numpy()
    first = np.r_[True, gid[1:] != gid[:-1]] if len(s) else np.zeros(0, bool)
    prev_most = np.where(first, -np.inf, np.r_[-np.inf, most[:-1]])
    i = np.flatnonzero(f < prev_most)
    j = np.r_[-1, at[:-1]][i].astype(np.int64)
    si, sj = s.iloc[i].reset_index(drop=True), s.iloc[j].reset_index(drop=True)
    moved = (si["by"] == BY_KEY).to_numpy(bool) & ~(
        (si["send_broker"].astype(object) == sj["send_broker"].astype(object)).to_numpy(bool)
        & (si["send_queue"].astype(object) == sj["send_queue"].astype(object)).fillna(False).to_numpy(bool)
        & (si["topic"] == sj["topic"]).to_numpy(bool))
    groups = si["group"].to_numpy(object)
    took = handover(held, groups, _delivery(sj, "f_"), _delivery(si, "f_"))
    ooo = si.assign(violation=OUT_OF_ORDER, cause=np.where(moved, "remapped", np.where(took, "handover", "redelivery")),
                    ts=si["f_ts"], earlier=sj["msg_id"].to_numpy(object))
    d = s[s["n"].to_numpy() > 1].reset_index(drop=True)
    took = handover(held, d["group"].to_numpy(object), _delivery(d, "f_"), _delivery(d, "s_"))
    dup = d.assign(violation=DUPLICATE, cause=np.where(took, "handover", "redelivery"), ts=d["s_ts"], earlier=None)
    out = pd.concat([ooo[VIOLATION_COLUMNS], dup[VIOLATION_COLUMNS]], ignore_index=True)
    return out.astype({"ts": float, "sent": float}).sort_values(["group", "ts"], kind="stable").reset_index(drop=True)


def unheld_checks(dl: pd.DataFrame, keyed: pd.DataFrame) -> pd.DataFrame:
    """``group, by``: for each delivery left out as unheld (:func:`reports.core.order_locks.unheld`),
    the check its message belongs to (by key when the group checks it by key, else by queue)."""
    known = dl.merge(keyed[["group", "msg_id"]].drop_duplicates(), how="left", indicator=True)["_merge"] == "both"
    return pd.DataFrame({"group": dl["group"].to_numpy(object),
                         "by": np.where(known.to_numpy(bool), BY_KEY, BY_QUEUE).astype(object)})


def summary(seqs: pd.DataFrame, viol: pd.DataFrame, unheld: pd.DataFrame) -> pd.DataFrame:
    """:data:`SUMMARY_COLUMNS`: one row per (group, check) that checked something or left a
    delivery out (``unheld``: :func:`unheld_checks`)."""
    keys = ["group", "by"]
    if seqs.empty and unheld.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in keys else np.int64) for c in SUMMARY_COLUMNS})
    g = seqs.groupby(keys, sort=True)
    index = pd.MultiIndex.from_frame(pd.concat([seqs[keys], unheld[keys]]).drop_duplicates()).sort_values()
    out = pd.DataFrame({"units": g["unit"].nunique(), "messages": g.size(),
                        "consumed": g["n"].agg(lambda n: int((n > 0).sum()))}).reindex(index)
    out["unheld"] = unheld.groupby(keys).size()
    v = viol.groupby(keys, sort=True)
    out["violated"] = v["unit"].nunique()
    kind = viol["violation"]
    for col, mask in (("out_of_order", kind == OUT_OF_ORDER), ("duplicates", kind == DUPLICATE),
                      *((c, viol["cause"] == c) for c in CAUSES)):
        out[col] = viol[mask.to_numpy(bool)].groupby(keys).size()
    out = out.fillna(0).reset_index()
    return out[SUMMARY_COLUMNS].astype({c: np.int64 for c in SUMMARY_COLUMNS[2:]})
