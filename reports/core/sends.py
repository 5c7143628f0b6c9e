"""Send attempts of one run: misrouted sends by target (docs/design.md §7, "Misrouted sends"),
outcomes and latency (§7, "Other metrics").

Each reason is a point lookup in an interval table that is disjoint per key, so a send
matches at most one row: :func:`point_lookup` sorts the sends and the intervals' starts
together by key and time and takes each send's last start before it (then ``time < end``).

Latency percentiles are exact (linear interpolation, as Spark's ``percentile``); the
per-bin ones of :func:`latency_over_time` (Spark's ``percentile_approx``, only plotted) are
numpy's ``inverted_cdf``: the smallest latency whose share of values at or below it
reaches the quantile, a value of the data as ``percentile_approx`` returns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqemu.reports.core.schema import AUTO_CREATE_TOPIC, NO_ROUTE_ERRORS

#: How far before the run end a send at the run end is looked up (ms; above the float
#: resolution of epoch-ms timestamps, about 0.0002 ms).
END_EPSILON_MS = 0.001

REASONS: tuple[str, ...] = ("dead", "paused", "partitioned", "stale_master", "not_master", "no_topic", "bad_queue")

#: The columns of :func:`sends`, in order.
SEND_COLUMNS: tuple[str, ...] = ("producer", "ts", "seq", "msg_id", "topic", "broker", "broker_id", "queue_id",
                                 "attempt", "outcome", "code", "latency_ms", "error", "group", "sharding_key",
                                 "route_queues", "broker_addr", "transaction", "proxy")

#: The columns of :func:`send_outcomes`, in order.
OUTCOME_COLUMNS: tuple[str, ...] = ("attempts", "ok", "failed", "no_route", "timeout", "error", "other",
                                    "messages", "acked")


def sends(ev: pd.DataFrame) -> pd.DataFrame:
    """Send attempts: ``producer, ts, seq, msg_id, topic, broker, broker_id, queue_id,
    attempt, outcome, code, latency_ms, error, group, sharding_key, route_queues, broker_addr,
    transaction`` (``sharding_key`` and ``route_queues``: ordered sends only; ``broker_addr``: the
    address the attempt went to, which names the node of a DLedger group's moving master;
    ``transaction``: ``half`` for a transactional producer's half; ``proxy``: the proxy that
    relayed a gRPC client's send, to the broker it chose)."""
    out = ev.loc[ev["kind"] == "send"].rename(columns={"node": "producer"})
    return out[list(SEND_COLUMNS)].reset_index(drop=True)


def _key_codes(left: list[np.ndarray], right: list[pd.Series]) -> tuple[np.ndarray, np.ndarray]:
    """One integer per row for the key columns of each side, equal where all keys are equal; -1
    where a key is null."""
    n = len(left[0]) if left else 0
    lk, rk = np.zeros(n, dtype=np.int64), np.zeros(len(right[0]) if right else 0, dtype=np.int64)
    for lcol, rcol in zip(left, right, strict=True):
        codes, uniques = pd.factorize(pd.concat([pd.Series(lcol, dtype=object), rcol.astype(object)],
                                                ignore_index=True))
        codes = codes.astype(np.int64)
        lc, rc = codes[:n], codes[n:]
        lk = np.where((lk < 0) | (lc < 0), -1, lk * (len(uniques) + 1) + lc)
        rk = np.where((rk < 0) | (rc < 0), -1, rk * (len(uniques) + 1) + rc)
    return lk, rk


def point_lookup(at: np.ndarray, keys: list[np.ndarray], iv: pd.DataFrame, iv_keys: list[str],
                 value: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each point ``at[i]`` with keys ``keys[j][i]`` (one array per column of ``iv_keys``):
    whether a row of ``iv`` with equal keys holds it in ``[start, end)``, and that row's
    ``value`` as float (NaN when none or null). ``iv`` must be disjoint per key; a null key
    or time matches nothing (as a Spark join condition).

    How: the points and the intervals' starts in one order by (key, time), a start before a
    point at the same time; each point's candidate is the last start before it, if its key is
    the point's (integer work, no join)."""
    n = len(at)
    found, vals = np.zeros(n, dtype=bool), np.full(n, np.nan)
    if n == 0 or iv.empty:
        return found, vals
    lk, rk = _key_codes(keys, [iv[c] for c in iv_keys])
    at = np.asarray(at, dtype=float)
    start, end = iv["start"].to_numpy(dtype=float, na_value=np.nan), iv["end"].to_numpy(dtype=float, na_value=np.nan)
    v = (iv[value].astype("Float64").to_numpy(dtype=float, na_value=np.nan) if value is not None
         else np.full(len(iv), np.nan))
    right = np.flatnonzero((rk >= 0) & ~np.isnan(start) & ~np.isnan(end))
    left = np.flatnonzero((lk >= 0) & ~np.isnan(at))
    if not len(right) or not len(left):
        return found, vals
    key = np.concatenate([rk[right], lk[left]])
    time = np.concatenate([start[right], at[left]])
    is_point = np.r_[np.zeros(len(right), dtype=bool), np.ones(len(left), dtype=bool)]
    order = np.lexsort((is_point, time, key))  # stable: of equal starts, the later row comes last
    pos = np.arange(len(order))
    last = np.maximum.accumulate(np.where(is_point[order], -1, pos))  # the last start at or before
    points = is_point[order]
    cand = last[points]
    ok = cand >= 0
    row = np.where(ok, order[np.maximum(cand, 0)], 0)  # index into the concatenation: a start
    ok &= key[row] == key[order[points]]
    iv_row = right[np.minimum(row, len(right) - 1)]
    point = left[order[points] - len(right)]
    ok &= at[point] < end[iv_row]
    found[point[ok]] = True
    vals[point[ok]] = v[iv_row[ok]]
    return found, vals


def _least_greatest(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spark's ``least``/``greatest`` of two string arrays: nulls skipped."""
    xn, yn = pd.isna(x), pd.isna(y)
    both = ~xn & ~yn
    lo, hi = np.where(xn, y, x).astype(object), np.where(xn, y, x).astype(object)
    lt = np.zeros(len(x), dtype=bool)
    lt[both] = x[both] <= y[both]
    lo[both] = np.where(lt[both], x[both], y[both])
    hi[both] = np.where(lt[both], y[both], x[both])
    return lo, hi


def classify_sends(sends: pd.DataFrame, nodes: pd.DataFrame, lives: pd.DataFrame, pauses: pd.DataFrame,
                   partitions: pd.DataFrame, hosts: pd.DataFrame, autocreate: pd.DataFrame,
                   write_queues: pd.DataFrame, run_end: float | None = None,
                   addresses: pd.DataFrame | None = None, masters: pd.DataFrame | None = None,
                   members: pd.DataFrame | None = None) -> pd.DataFrame:
    """All sends plus ``target_id``, ``target`` (node) and ``reason`` (None when the send was
    well routed or had no broker), in the order of ``sends`` (a fresh index). The target is the
    node whose address (``addresses``: ``addr, node``) the attempt's ``broker_addr`` is, when
    known: a DLedger group's master moves between its nodes, so its name and id do not tell
    which node an attempt went to; else the node table's node of the (broker, id), the first
    where it names several (a DLedger group's peers share their broker name). ``masters``
    (``node, start, end``) and ``members`` (``node``): when a DLedger member's broker was the
    master, and the members (reason ``stale_master``: :func:`reports.core.failover.master_intervals`).

    ``run_end``: intervals are ``[start, end)`` and the ones nothing ended stop at the run
    end, so a send logged at the very end is looked up a hair earlier, inside them."""
    bn = nodes.loc[(nodes["role"] == "broker") & nodes["broker"].notna(), ["node", "broker", "broker_id"]]
    bn = pd.DataFrame({"broker": bn["broker"].astype(object), "target_id": bn["broker_id"].astype("Int64").fillna(0),
                       "_node": bn["node"].astype(object)}).drop_duplicates(["broker", "target_id"])
    df = sends.reset_index(drop=True)
    df["target_id"] = df["broker_id"].astype("Int64").fillna(0)
    df = df.merge(bn, on=["broker", "target_id"], how="left", sort=False) if len(bn) else df.assign(_node=None)
    has_broker = df["broker"].notna().to_numpy()
    rule = (df["broker"].astype(str) + "-" + df["target_id"].astype(str)).to_numpy(dtype=object)
    named = df["_node"].to_numpy(dtype=object)
    target = np.where(pd.isna(named), rule, named)
    if addresses is not None and len(addresses) and "broker_addr" in df:
        at = df["broker_addr"].map(addresses.drop_duplicates("addr").set_index("addr")["node"]).to_numpy(object)
        target = np.where(pd.isna(at), target, at)
    target = np.where(has_broker, target, None).astype(object)
    df = df.drop(columns="_node").assign(target=target)

    ts = df["ts"].to_numpy(dtype=float)
    at = ts if run_end is None else np.fmin(ts, float(run_end) - END_EPSILON_MS)
    topic = df["topic"].to_numpy(dtype=object)
    # a gRPC client's attempt crossed the link from its proxy to the broker, not its own
    sender = df["proxy"].where(df["proxy"].notna(), df["producer"]) if "proxy" in df else df["producer"]
    a, b = _least_greatest(sender.to_numpy(dtype=object), target)
    alive, _ = point_lookup(at, [target], lives, ["node"])
    paused, _ = point_lookup(at, [target], pauses, ["node"])
    cut, _ = point_lookup(at, [a, b], partitions, ["a", "b"])
    hosted, _ = point_lookup(at, [target, topic], hosts, ["node", "topic"])
    auto, _ = point_lookup(at, [target], autocreate, ["node"])
    _, wq = point_lookup(at, [target, topic], write_queues, ["node", "topic"], "write_queues")
    tbw = write_queues[write_queues["topic"] == AUTO_CREATE_TOPIC]
    _, wq_default = point_lookup(at, [target], tbw, ["node"], "write_queues")
    wq = np.where(np.isnan(wq), np.where(auto, wq_default, np.nan), wq)
    queue = df["queue_id"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad_queue = queue >= wq  # False where either is null
    slave = df["target_id"].to_numpy(dtype=np.int64) != 0
    stale = np.zeros(len(df), dtype=bool)
    if members is not None and len(members):
        master, _ = point_lookup(at, [target], masters, ["node"])
        stale = pd.Series(target, dtype=object).isin(members["node"]).to_numpy(bool) & ~master
    reason = np.full(len(df), None, dtype=object)
    # the last assignment wins: reasons from the weakest to the strongest, then no broker
    conds = [~alive, paused, cut, stale, slave, ~hosted & ~auto, bad_queue]
    for name, cond in reversed(list(zip(REASONS, conds, strict=True))):
        reason[cond] = name
    reason[~has_broker] = None
    df["reason"] = reason
    return df[[*sends.columns, "target_id", "target", "reason"]]


def _count_by(df: pd.DataFrame, keys: list[str], name: str) -> pd.DataFrame:
    """Rows per distinct ``keys`` (null a key value like any other), as column ``name``."""
    if df.empty:
        return pd.DataFrame({**{k: pd.Series(dtype=df[k].dtype) for k in keys}, name: pd.Series(dtype=np.int64)})
    out = df.groupby(keys, dropna=False, sort=True).size().rename(name).reset_index()
    out[name] = out[name].astype(np.int64)
    return out


def misrouted_by_reason(classified: pd.DataFrame) -> pd.DataFrame:
    """``reason, outcome, sends`` for misrouted sends."""
    return _count_by(classified.loc[classified["reason"].notna(), ["reason", "outcome"]], ["reason", "outcome"],
                     "sends")


def _bins(ts: pd.Series, run_start: float, bin_ms: float) -> np.ndarray:
    """``floor((ts - run_start) / bin_ms)`` as whole numbers."""
    return np.floor((ts.to_numpy(dtype=float) - float(run_start)) / float(bin_ms)).astype(np.int64)


def misrouted_over_time(classified: pd.DataFrame, run_start: float, bin_ms: float) -> pd.DataFrame:
    """``bin, reason, sends``: misrouted sends per time bin (bin = floor((ts-start)/bin_ms))."""
    mis = classified.loc[classified["reason"].notna()]
    df = pd.DataFrame({"bin": _bins(mis["ts"], run_start, bin_ms), "reason": mis["reason"].to_numpy(dtype=object)})
    return _count_by(df, ["bin", "reason"], "sends")


def send_outcomes(sends: pd.DataFrame) -> pd.DataFrame:
    """One row: ``attempts, ok, failed, no_route, timeout, error, other, messages, acked``
    (``messages``/``acked``: distinct non-null ``msg_id``, with an ``ok`` attempt); no row
    when there are no sends."""
    if sends.empty:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in OUTCOME_COLUMNS})
    o = sends["outcome"]
    is_ok, timeout, error, no_route = (o == "ok").to_numpy(), (o == "timeout").to_numpy(), \
        (o == "error").to_numpy(), (o == "no_route").to_numpy()
    ids, distinct = pd.factorize(sends["msg_id"])  # a null id: -1, not a message
    acked = np.flatnonzero(np.bincount(ids[is_ok & (ids >= 0)], minlength=len(distinct)))
    counts = {"attempts": len(sends), "ok": is_ok.sum(), "failed": (timeout | error).sum(), "no_route": no_route.sum(),
              "timeout": timeout.sum(), "error": error.sum(), "other": (~(is_ok | timeout | error | no_route)).sum(),
              "messages": len(distinct), "acked": len(acked)}
    return pd.DataFrame({c: [int(counts[c])] for c in OUTCOME_COLUMNS}, dtype=np.int64)


def latency_percentiles(sends: pd.DataFrame) -> pd.DataFrame:
    """``scope`` (all/ok), ``n, p50_ms, p90_ms, p99_ms, max_ms, mean_ms`` over attempts with
    a latency; a scope without any has no row."""
    lat = sends["latency_ms"].to_numpy(dtype=float, na_value=np.nan)
    has = ~np.isnan(lat)
    rows = []
    for scope, where in (("all", has), ("ok", has & (sends["outcome"] == "ok").to_numpy(dtype=bool))):
        v = lat[where]
        if len(v):
            p50, p90, p99 = np.percentile(v, [50, 90, 99], method="linear")
            rows.append((scope, len(v), p50, p90, p99, v.max(), v.mean()))
    out = pd.DataFrame(rows, columns=["scope", "n", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms"])
    return out.astype({"scope": object, "n": np.int64, **{c: float for c in out.columns[2:]}})


def latency_over_time(sends: pd.DataFrame, run_start: float, bin_ms: float) -> pd.DataFrame:
    """``bin, n, p50_ms, p99_ms, max_ms, timeouts`` per time bin, for the latency plot
    (percentiles by ``inverted_cdf``, see the module docstring)."""
    v = sends["latency_ms"].to_numpy(dtype=float, na_value=np.nan)
    has = ~np.isnan(v)
    df = pd.DataFrame({"bin": _bins(sends["ts"], run_start, bin_ms)[has], "v": v[has],
                       "t": (sends["outcome"] == "timeout").to_numpy(dtype=np.int64)[has]})
    cols = ["bin", "n", "p50_ms", "p99_ms", "max_ms", "timeouts"]
    if df.empty:
        return pd.DataFrame({c: pd.Series(dtype=np.int64 if c in ("bin", "n", "timeouts") else float) for c in cols})
    out = df.groupby("bin", sort=True).agg(n=("v", "size"), max_ms=("v", "max"), timeouts=("t", "sum"))
    vals = df["v"].to_numpy()[np.lexsort((df["v"].to_numpy(), df["bin"].to_numpy()))]
    n = out["n"].to_numpy()
    first = np.r_[0, np.cumsum(n)[:-1]]  # where each bin's sorted latencies begin
    for name, (num, den) in (("p50_ms", (50, 100)), ("p99_ms", (99, 100))):
        k = np.maximum((num * n + den - 1) // den, 1)  # inverted_cdf: the ceil(q * n)-th smallest
        out[name] = vals[first + k - 1]
    out = out.reset_index()
    return out[cols].astype({"bin": np.int64, "n": np.int64, "timeouts": np.int64})


def no_route_errors(sends: pd.DataFrame) -> pd.DataFrame:
    """``topic, errors``: attempts whose error says "No route info of this topic" or (an ordered
    send's) "No route info for this topic"."""
    err = sends["error"]
    hit = np.logical_or.reduce([err.str.contains(text, regex=False, na=False).to_numpy(dtype=bool)
                                for text in NO_ROUTE_ERRORS])
    return _count_by(sends.loc[hit, ["topic"]], ["topic"], "errors")
