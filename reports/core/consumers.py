"""Consumer-side metrics of one run: consumption (acked, lost, duplicates, consumed but never
acked), loss per (group, topic), auto-create coverage, SUBSCRIPTION_NOT_EXIST pulls and queues
left to non-subscribers. The rules are docs/design.md §7, "Other metrics" (nulls as its
"Conventions" say); ``sends`` is the send-attempt table (``producer, ts, seq, msg_id, topic,
..., outcome, ...``).

Consumption and loss are computed once for both over integer codes (:class:`Messages`): a run's
topics and groups coded per line, its message ids by Arrow, so the joins and distinct counts
over hundreds of thousands of messages are numpy work.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core.schema import EVENTS, SUBSCRIPTION_NOT_EXIST

#: Consumer event kinds that show a group subscribes a topic.
SUBSCRIBING_KINDS: tuple[str, ...] = ("rebalance", "pull", "consume")

#: The columns of :func:`consumption`, in order.
CONSUMPTION_COLUMNS: tuple[str, ...] = ("topic", "acked", "consumed", "lost", "duplicate_messages",
                                        "duplicate_deliveries", "consumed_unacked")


def _is(s: pd.Series, value: object) -> pd.Series:
    """``s == value`` with null as False (Spark: a comparison with null is not true)."""
    return s.eq(value).fillna(False).astype(bool)


def _zero(s: pd.Series) -> pd.Series:
    """``coalesce(s, 0) == 0``."""
    return s.isna().to_numpy(dtype=bool) | _is(s, 0)


def _kind(ev: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    return ev.loc[ev["kind"].isin(kinds)]


def _stop(until: float | None) -> float | None:
    return None if until is None or (isinstance(until, float) and math.isnan(until)) else float(until)


def _explode(df: pd.DataFrame, col: str, keep: list[str], name: str) -> pd.DataFrame:
    """``keep`` columns and one row per item of list column ``col`` (as ``name``), as Spark's
    ``explode``: a null or empty list gives no row, a null item a null value."""
    arr = pa.array(df[col], from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_null(arr.type):  # an object column of nulls only
        arr = arr.cast(pa.list_(pa.string()))
    if len(arr) == 0:
        out = df[keep].iloc[:0].reset_index(drop=True)
        out[name] = pd.Series([], dtype=object)
        return out
    idx = pc.list_parent_indices(arr).to_numpy()
    out = df[keep].iloc[idx].reset_index(drop=True)
    out[name] = pc.list_flatten(arr).to_pandas()
    return out


def _nulls_as_none(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """``cols`` of ``df`` as object columns with None for null (a group-by over an all-null key
    gives a float NaN)."""
    out = df[cols].astype(object)
    return out.where(out.notna(), None)


def _codes(*columns: pd.Series) -> tuple[list[np.ndarray], np.ndarray]:
    """``(codes, values)``: each column's values as integer codes over ONE dictionary of all
    their ``values`` (null: -1), so that the same string has the same code in every column:
    joins and distinct counts become integer work. For columns of few distinct values (topics,
    groups); :func:`_id_codes` for message ids."""
    codes, values = pd.factorize(pd.concat([c.astype(object) for c in columns], ignore_index=True))
    bounds = np.cumsum([0, *(len(c) for c in columns)])
    return ([codes[lo:hi].astype(np.int64) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)],
            np.asarray(values, dtype=object))


def _id_codes(*columns: pd.Series | pa.Array) -> tuple[list[np.ndarray], int]:
    """``(codes, how many values)`` as :func:`_codes`, encoded by Arrow: no Python string is made
    for any of a run's hundreds of thousands of message ids."""
    arrays = [c if isinstance(c, pa.Array) else pa.array(c.astype(object), type=pa.string(), from_pandas=True)
              for c in columns]
    encoded = pc.dictionary_encode(pa.concat_arrays(arrays))
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
    bounds = np.cumsum([0, *(len(c) for c in columns)])
    return [codes[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)], len(encoded.dictionary)


def _flat(df: pd.DataFrame, col: str) -> tuple[np.ndarray, pa.Array]:
    """``(row, item)`` of each item of the list column ``col`` (as :func:`_explode`), the items
    left in Arrow."""
    arr = pa.array(df[col], type=EVENTS.field(col).type, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return pc.list_parent_indices(arr).to_numpy(), pc.list_flatten(arr)


def _distinct(codes: np.ndarray) -> np.ndarray:
    """The distinct codes (null, -1, included), sorted: counted, not hashed (the codes are dense)."""
    return np.flatnonzero(np.bincount(codes + 1)) - 1 if len(codes) else codes


def _pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One int64 key per row for the pair of codes ``(a, b)`` (nulls, -1, kept distinct)."""
    return (a + 1) * (1 << 31) + (b + 1)


class Messages:
    """What :func:`consumption` and :func:`group_loss` read, computed once for both: a run's ok
    send attempts, its deliveries (one row per message id a ``consume`` lists) and its
    subscriptions, their topics, message ids and groups as codes over one dictionary each, and
    each message's first ok attempt before ``until`` (``run.stop``; None: any).

    ``unheld``: for each row of ``ev``, whether it is a ``consume`` line whose deliveries a real
    orderly client dropped (:attr:`reports.core.order_run.OrderRun.unheld_lines`; None: none):
    they are never duplicates (docs/design.md §7 "Consumption"), and still count as consumed."""

    def __init__(self, ev: pd.DataFrame, sends: pd.DataFrame, until: float | None = None,
                 unheld: np.ndarray | None = None) -> None:
        is_ok = _is(sends["outcome"], "ok").to_numpy(dtype=bool)
        ok = sends[["msg_id", "ts"]].loc[is_ok]
        lines = ev[["kind", "group", "topic", "msg_ids"]]
        is_consume = (lines["kind"] == "consume").to_numpy(dtype=bool)
        consumes = lines.loc[is_consume]
        row, dl_msg = _flat(consumes, "msg_ids")  # a delivery per message id: ``row`` its consume line
        self.dl_unheld = (np.zeros(len(row), dtype=bool) if unheld is None
                          else np.asarray(unheld, dtype=bool)[is_consume][row])
        subs = subscriptions(ev)
        # topics and groups coded per line, then taken per attempt or delivery
        (self.sent_topic, consume_topic, self.sub_topic, self.watched), self.topics = _codes(
            sends["topic"], consumes["topic"], subs["topic"], _kind(lines, "consume", "rebalance")["topic"])
        self.ok_topic, self.dl_topic = self.sent_topic[is_ok], consume_topic[row]
        (self.ok_msg, self.dl_msg), self.n_msgs = _id_codes(ok["msg_id"], dl_msg)
        (consume_group, self.sub_group), _ = _codes(consumes["group"], subs["group"])
        self.dl_group = consume_group[row]
        self.subs = subs
        # the first ok attempt of each (topic, message), kept when before ``until``
        key = _pairs(self.ok_topic, self.ok_msg)
        ts = ok["ts"].to_numpy(dtype=float)
        order = np.lexsort((ts, key))
        first = order[np.r_[True, key[order][1:] != key[order][:-1]]] if len(key) else order
        stop = _stop(until)
        if stop is not None:
            first = first[ts[first] < stop]
        self.first_topic, self.first_msg = self.ok_topic[first], self.ok_msg[first]

    def among(self, msgs: np.ndarray, members: np.ndarray) -> np.ndarray:
        """For each message code of ``msgs``: whether it is one of ``members`` (a null, -1, never
        is); a table lookup, message codes being dense."""
        n = self.n_msgs
        table = np.zeros(n + 1, bool)  # index n: a null message id
        table[members[members >= 0]] = True
        return table[np.where(msgs >= 0, msgs, n)]


def _unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(a, b)`` rows."""
    first = ~pd.Series(_pairs(a, b)).duplicated().to_numpy()
    return a[first], b[first]


def _per_code(codes: np.ndarray, size: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Rows (or ``weights``) per non-null code, for codes ``0 .. size - 1``."""
    keep = codes >= 0
    return np.bincount(codes[keep], weights=None if weights is None else weights[keep], minlength=size)[:size]


def consumption(m: Messages) -> pd.DataFrame:
    """Per topic: ``topic, acked, consumed, lost, duplicate_messages, duplicate_deliveries,
    consumed_unacked`` (a first ack at or after ``until`` cannot make a message lost; an unheld
    delivery, :class:`Messages`, is consumed but never a duplicate)."""
    acked_t, acked_m = _unique_pairs(m.ok_topic, m.ok_msg)
    consumed_t, consumed_m = _unique_pairs(m.dl_topic, m.dl_msg)
    lost = np.isin(m.first_topic, m.watched[m.watched >= 0]) & ~m.among(m.first_msg, consumed_m)
    unacked = ~m.among(consumed_m, acked_m)
    # deliveries of the same (group, topic, message) more than once, the unheld ones left out
    held = ~m.dl_unheld if m.dl_unheld.any() else slice(None)
    dl_topic = m.dl_topic[held]
    group_topic = pd.factorize(_pairs(m.dl_group[held], dl_topic))[0].astype(np.int64)
    each, firsts = pd.factorize(_pairs(group_topic, m.dl_msg[held]))
    n = np.bincount(each, minlength=len(firsts))
    first = np.flatnonzero(~pd.Series(each).duplicated().to_numpy())  # in order of ``each``'s codes
    dup_t, dup_n = dl_topic[first][n > 1], n[n > 1]
    codes = _distinct(np.concatenate([acked_t, consumed_t]))
    size = int(codes.max(initial=-1)) + 1
    names = pd.Series([m.topics[c] if c >= 0 else None for c in codes], dtype=object)
    out = pd.DataFrame({"topic": names, "_c": codes}).sort_values("topic", na_position="first", kind="stable")
    at = np.where(out["_c"].to_numpy() >= 0, out["_c"].to_numpy(), size)

    def per(codes_of: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.r_[_per_code(codes_of, size, weights), 0][at].astype("int64")
    out["acked"] = per(acked_t)
    out["consumed"] = per(consumed_t)
    out["lost"] = per(m.first_topic[lost])
    out["duplicate_messages"] = per(dup_t)
    out["duplicate_deliveries"] = per(dup_t, (dup_n - 1).astype(float))
    out["consumed_unacked"] = per(consumed_t[unacked])
    return out[list(CONSUMPTION_COLUMNS)].reset_index(drop=True)


def subscriptions(ev: pd.DataFrame) -> pd.DataFrame:
    """``group, topic``: the topics each consumer group subscribed in the run."""
    sub = _kind(ev[["kind", "group", "topic"]], *SUBSCRIBING_KINDS)
    sub = sub.loc[sub["group"].notna() & sub["topic"].notna(), ["group", "topic"]]
    return sub.drop_duplicates().sort_values(["group", "topic"]).reset_index(drop=True)


def group_loss(m: Messages) -> pd.DataFrame:
    """``group, topic, expected, consumed, lost`` per subscribed (group, topic) whose topic some
    producer sent to: ``expected`` messages first acked before ``until``, ``consumed`` of them
    by the group (a ``consume`` of it under any topic)."""
    sent = np.isin(m.sub_topic, _distinct(m.sent_topic[m.sent_topic >= 0]))
    expected, consumed = [], []
    for g, t in zip(m.sub_group[sent], m.sub_topic[sent], strict=True):
        msgs = m.first_msg[m.first_topic == t]
        expected.append(len(msgs))
        consumed.append(int(m.among(msgs, m.dl_msg[m.dl_group == g]).sum()))
    out = m.subs.loc[sent, ["group", "topic"]].reset_index(drop=True)
    out["expected"] = np.array(expected, dtype="int64")
    out["consumed"] = np.array(consumed, dtype="int64")
    out["lost"] = out["expected"] - out["consumed"]
    return out


def _sorted_set(values: Iterable[object]) -> tuple[str, ...]:
    """``array_sort(collect_set(...))``: the distinct non-null values, sorted."""
    return tuple(sorted({v for v in values if isinstance(v, str)}))


def autocreate_coverage(ev: pd.DataFrame, nodes: pd.DataFrame, host_iv: pd.DataFrame,
                        autocreate_iv: pd.DataFrame) -> pd.DataFrame:
    """``topic, created_on, hosted_on, auto_masters, hosts, of_auto_masters`` for every topic a
    master created with ``how=auto``. ``host_iv``: ``node, topic, broker, broker_id, start, end``;
    ``autocreate_iv``: ``node, start, end``; ``nodes``: the node table."""
    is_broker = _is(nodes["role"], "broker")
    bid0 = _zero(nodes["broker_id"])
    masters = nodes.loc[is_broker & nodes["broker"].notna() & bid0, ["node", "broker"]]
    via_tbw = autocreate_iv[["node"]].dropna().merge(masters, on="node")["broker"]
    via_manifest = nodes.loc[is_broker & _is(nodes["auto_create"], True) & bid0, "broker"]
    auto_masters = _sorted_set(pd.concat([via_tbw, via_manifest]))
    lines = _kind(ev, "broker.topic")
    lines = lines.loc[_is(lines["how"], "auto") & _zero(lines["broker_id"])]
    created = lines.groupby("topic", dropna=False, sort=True)["broker"].agg(_sorted_set).rename("created_on")
    hosted = (host_iv.loc[_is(host_iv["broker_id"], 0)].groupby("topic", dropna=True)["broker"]
              .agg(_sorted_set).rename("hosted_on"))
    out = created.reset_index()
    out["topic"] = _nulls_as_none(out, ["topic"])["topic"]
    out["hosted_on"] = out["topic"].map(hosted)
    out["hosted_on"] = [h if isinstance(h, tuple) else () for h in out["hosted_on"]]
    out["auto_masters"] = [auto_masters] * len(out)
    out["hosts"] = np.array([len(h) for h in out["hosted_on"]], dtype="int64")
    auto = set(auto_masters)
    out["of_auto_masters"] = np.array([len(auto.intersection(h)) for h in out["hosted_on"]], dtype="int64")
    return out[["topic", "created_on", "hosted_on", "auto_masters", "hosts", "of_auto_masters"]]


def subscription_not_exist(ev: pd.DataFrame) -> pd.DataFrame:
    """``node, group, topic, pulls``: pulls answered SUBSCRIPTION_NOT_EXIST (code 24)."""
    pulls = _kind(ev, "pull")
    pulls = pulls.loc[_is(pulls["code"], SUBSCRIPTION_NOT_EXIST)]
    keys = ["node", "group", "topic"]
    counts = pulls.groupby(keys, dropna=False).size().reset_index(name="pulls")
    return pd.concat([_nulls_as_none(counts, keys), counts["pulls"].astype("int64")], axis=1)


def _queue_keys(df: pd.DataFrame, col: str, keep: list[str]) -> pd.DataFrame:
    """``keep`` and ``q``: each queue of the queue-list column ``col`` as ``broker:queue_id``."""
    arr = pa.array(df[col], type=EVENTS.field(col).type, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    queues = pc.list_flatten(arr)
    ids = pc.cast(pc.struct_field(queues, "queue_id"), pa.string())
    out = df[keep].iloc[pc.list_parent_indices(arr).to_numpy()].reset_index(drop=True)
    out["q"] = pc.binary_join_element_wise(pc.struct_field(queues, "broker"), ids, ":").to_pandas()
    return out


def latest(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The last row by (ts, seq) of each ``keys`` group (null keys form a group)."""
    return df.sort_values(["ts", "seq"]).drop_duplicates(keys, keep="last")


def _sorted_cids(values: Iterable[object]) -> tuple[str | None, ...]:
    """Distinct values sorted as ``array_sort`` does: a null (if any) last."""
    vals = list(values)
    head = tuple(sorted({v for v in vals if isinstance(v, str)}))
    return head + ((None,) if any(not isinstance(v, str) for v in vals) else ())


def non_subscriber_queues(ev: pd.DataFrame) -> pd.DataFrame:
    """``group, topic, subscribers, non_subscribers, queues, unowned_queues`` per (group, topic)
    at each subscriber's last ``rebalance`` (``unowned_queues``: queues allocated to
    non-subscribers; docs/design.md §7, "Other metrics", Subscriptions)."""
    cols = ["group", "topic", "subscribers", "non_subscribers", "queues", "unowned_queues"]
    gt = ["group", "topic"]
    last = latest(_kind(ev, "rebalance"), ["node", *gt]).reset_index(drop=True)
    if last.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c.endswith("queues") else object) for c in cols})
    # one number per (group, topic), a null key a value like any other (as Spark's group-by)
    last["_g"] = last.groupby(gt, dropna=False, sort=True).ngroup()
    out = last.drop_duplicates("_g").sort_values("_g")[gt].reset_index(drop=True)
    routes = latest(_kind(ev, "client.route"), ["node", "topic"]).dropna(subset=["node", "topic"])
    route_q = _queue_keys(routes, "publish_queues", ["node", "topic"])
    subs = last[["_g", "cid"]].dropna(subset=["cid"]).drop_duplicates()
    seen = _explode(last, "cids", ["_g"], "cid").drop_duplicates()
    alloc = _queue_keys(last, "allocated", ["_g"]).drop_duplicates()
    rq = last[["node", "topic", "_g"]].dropna(subset=["node", "topic"]).merge(route_q, on=["node", "topic"])
    universe = pd.concat([rq[["_g", "q"]], alloc], ignore_index=True).drop_duplicates()

    def minus(a: pd.DataFrame, b: pd.DataFrame, col: str) -> pd.DataFrame:
        m = a.merge(b[["_g", col]], on=["_g", col], how="left", indicator=True)
        return m.loc[m["_merge"] == "left_only", ["_g", col]]

    def per_group(df: pd.DataFrame, col: str, how: object) -> pd.Series:
        return df.groupby("_g")[col].agg(how).reindex(range(len(out)))

    out["subscribers"] = [v if isinstance(v, tuple) else () for v in per_group(subs, "cid", _sorted_cids)]
    out["non_subscribers"] = [v if isinstance(v, tuple) else ()
                              for v in per_group(minus(seen, subs, "cid"), "cid", _sorted_cids)]
    out["queues"] = per_group(universe, "q", "size").fillna(0).to_numpy(dtype="int64")
    has_nonsub = np.array([len(v) > 0 for v in out["non_subscribers"]], dtype=bool)
    unowned = per_group(minus(universe, alloc, "q"), "q", "size").fillna(0).to_numpy(dtype="int64")
    out["unowned_queues"] = np.where(has_nonsub, unowned, 0).astype("int64")
    return out[cols]
