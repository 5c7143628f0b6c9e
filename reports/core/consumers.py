"""Consumer-side metrics of one run (docs/design.md §7 "Other metrics"): consumption (acked,
lost, duplicates, consumed but never acked), loss per (group, topic), auto-create coverage,
SUBSCRIPTION_NOT_EXIST pulls and queues left to non-subscribers.

The pandas port of the consumer half of ``reports/clients.py`` and of ``reports/loss.py``: the
same rules, null handling included (a join never matches a null key, a group-by keeps null as a
group, ``collect_set`` drops nulls), so their module docstrings are the specification.
``sends`` is the send-attempt table (``producer, ts, seq, msg_id, topic, ..., outcome, ...``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from reports.core.schema import SUBSCRIPTION_NOT_EXIST

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


def _first_acks(sends: pd.DataFrame, until: float | None) -> pd.DataFrame:
    """``topic, msg_id``: messages whose first ok attempt is before ``until`` (None: any)."""
    ok = sends.loc[_is(sends["outcome"], "ok"), ["topic", "msg_id", "ts"]]
    first = ok.groupby(["topic", "msg_id"], dropna=False, sort=False)["ts"].min().reset_index()
    stop = _stop(until)
    if stop is not None:
        first = first.loc[first["ts"] < stop]
    return _nulls_as_none(first, ["topic", "msg_id"])


def _deliveries(ev: pd.DataFrame) -> pd.DataFrame:
    """``group, topic, msg_id``: one row per message id a ``consume`` lists."""
    return _explode(_kind(ev, "consume"), "msg_ids", ["group", "topic"], "msg_id")


def _count_by_topic(df: pd.DataFrame) -> pd.Series:
    """Rows per non-null topic (what a join on ``topic`` can match)."""
    return df.groupby("topic", dropna=True).size()


def _per_topic(topics: pd.Series, counts: pd.Series) -> pd.Series:
    """``counts`` looked up for each topic (a left join: a null topic matches nothing), 0 if none."""
    return topics.map(counts).fillna(0).astype("int64")


def _nonnull(values: pd.Series) -> pd.Series:
    return values.dropna().drop_duplicates()


def consumption(ev: pd.DataFrame, sends: pd.DataFrame, until: float | None = None) -> pd.DataFrame:
    """Per topic: ``topic, acked, consumed, lost, duplicate_messages, duplicate_deliveries,
    consumed_unacked``; ``until``: ``run.stop``, at or after which a first ack cannot make a
    message lost (None: none)."""
    acked = sends.loc[_is(sends["outcome"], "ok"), ["topic", "msg_id"]].drop_duplicates()
    deliveries = _deliveries(ev)
    consumed = deliveries[["topic", "msg_id"]].drop_duplicates()
    watched = _nonnull(_kind(ev, "consume", "rebalance")["topic"])
    first = _first_acks(sends, until)
    lost = first.loc[first["topic"].isin(watched) & ~first["msg_id"].isin(_nonnull(consumed["msg_id"]))]
    n = deliveries.groupby(["group", "topic", "msg_id"], dropna=False, sort=False).size()
    dup = n[n > 1].reset_index(name="n")
    unacked = consumed.loc[~consumed["msg_id"].isin(_nonnull(acked["msg_id"]))]
    topics = pd.concat([acked["topic"], consumed["topic"]], ignore_index=True).drop_duplicates()
    out = pd.DataFrame({"topic": topics.sort_values(na_position="first").reset_index(drop=True)})
    t = out["topic"]
    out["acked"] = _per_topic(t, _count_by_topic(acked))
    out["consumed"] = _per_topic(t, _count_by_topic(consumed))
    out["lost"] = _per_topic(t, _count_by_topic(lost))
    out["duplicate_messages"] = _per_topic(t, _count_by_topic(dup))
    out["duplicate_deliveries"] = _per_topic(t, (dup["n"] - 1).groupby(dup["topic"], dropna=True).sum())
    out["consumed_unacked"] = _per_topic(t, _count_by_topic(unacked))
    return out[list(CONSUMPTION_COLUMNS)]


def subscriptions(ev: pd.DataFrame) -> pd.DataFrame:
    """``group, topic``: the topics each consumer group subscribed in the run."""
    sub = _kind(ev, *SUBSCRIBING_KINDS)
    sub = sub.loc[sub["group"].notna() & sub["topic"].notna(), ["group", "topic"]]
    return sub.drop_duplicates().sort_values(["group", "topic"]).reset_index(drop=True)


def group_loss(ev: pd.DataFrame, sends: pd.DataFrame, until: float | None = None) -> pd.DataFrame:
    """``group, topic, expected, consumed, lost`` per subscribed (group, topic) whose topic some
    producer sent to: ``expected`` messages first acked before ``until`` (``run.stop``; None:
    any), ``consumed`` of them by the group (a ``consume`` of it under any topic)."""
    pairs = subscriptions(ev)
    pairs = pairs.loc[pairs["topic"].isin(_nonnull(sends["topic"]))].reset_index(drop=True)
    got = _deliveries(ev)[["group", "msg_id"]].dropna().drop_duplicates()
    got["_got"] = 1
    per = (pairs.merge(_first_acks(sends, until).dropna(subset=["topic"]), on="topic")
           .merge(got, on=["group", "msg_id"], how="left"))
    counts = per.groupby(["group", "topic"], sort=False).agg(expected=("topic", "size"), consumed=("_got", "count"))
    out = pairs.merge(counts.reset_index(), on=["group", "topic"], how="left")
    for c in ("expected", "consumed"):
        out[c] = out[c].fillna(0).astype("int64")
    out["lost"] = out["expected"] - out["consumed"]
    return out[["group", "topic", "expected", "consumed", "lost"]]


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
    """``keep`` and ``q``: each pair of list<list<string>> column ``col`` as Spark's
    ``concat_ws(":", q[0], q[1])`` (nulls skipped; "" when both are null)."""
    pairs = _explode(df, col, keep, "_pair")
    arr = pa.array(pairs["_pair"], type=pa.list_(pa.string()), from_pandas=True)
    fixed = pc.list_slice(arr, 0, 2, return_fixed_size_list=True)
    a, b = pc.list_element(fixed, 0), pc.list_element(fixed, 1)
    joined = pc.coalesce(pc.binary_join_element_wise(a, b, ":"), a, b, pa.scalar(""))
    out = pairs[keep].copy()
    out["q"] = joined.to_pandas()
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
    non-subscribers; see the module docstring of ``reports/clients.py``)."""
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
