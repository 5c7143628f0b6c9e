"""Interval arithmetic on pandas tables.

Every state the metrics talk about (a broker alive, a node paused, a client's view of a
topic) is a set of half-open intervals ``[start, end)`` in host wall ms. These helpers build
them from change points, merge them, cut a time line into elementary segments and join two
piecewise-constant functions into pieces on which both are constant, by sorting and numpy
(no per-row Python), as they run on one node's rows, up to about a hundred thousand.

Conventions: ``start``/``end`` are float64; an interval never has ``end <= start`` (such rows
are dropped); ``keys`` are the partitioning columns (may be empty: one time line). Rows group
as Spark's windows do: a null key is a key like any other, except in the joins
(:func:`overlap_index`, :func:`overlap_pieces`), where a null key matches nothing.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

START, END = "start", "end"


def num(value: float | None) -> float:
    """A per-run number as a float, None as NaN (a comparison with it is never true)."""
    return np.nan if value is None else float(value)


def group_codes(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """An int64 group number per row of ``df`` by ``keys`` (nulls form groups; no keys: one group)."""
    if not keys or df.empty:
        return np.zeros(len(df), dtype=np.int64)
    return df.groupby(list(keys), sort=False, dropna=False).ngroup().to_numpy(np.int64)


def ordered(df: pd.DataFrame, keys: Sequence[str], by: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """``df`` sorted by group, then ``by`` (nulls first, as Spark), index reset; and the group
    numbers in that order. Each group's rows are contiguous."""
    gid = group_codes(df, keys)
    out = df.assign(_g=gid).sort_values(["_g", *by], kind="mergesort", na_position="first", ignore_index=True)
    return out.drop(columns="_g"), out["_g"].to_numpy(np.int64)


def _last_of_group(gid: np.ndarray) -> np.ndarray:
    """True where the next row belongs to another group (or there is none)."""
    return np.r_[gid[1:] != gid[:-1], True] if len(gid) else np.zeros(0, dtype=bool)


def _first_of_group(gid: np.ndarray) -> np.ndarray:
    """True where the previous row belongs to another group (or there is none)."""
    return np.r_[True, gid[1:] != gid[:-1]] if len(gid) else np.zeros(0, dtype=bool)


def _next(values: np.ndarray, gid: np.ndarray, fill: float) -> np.ndarray:
    """The next row's value within the group, ``fill`` after a group's last row."""
    nxt = np.empty(len(values), dtype=float)
    nxt[:-1] = values[1:]
    nxt[_last_of_group(gid)] = fill
    return nxt


def _blocks(first: np.ndarray, df: pd.DataFrame, cols: Sequence[str], start: np.ndarray,
            end: np.ndarray) -> pd.DataFrame:
    """One row per contiguous block (``first`` marks each block's first row): ``cols`` of the
    first row, the smallest ``start`` and the largest ``end`` (nulls ignored)."""
    heads = np.flatnonzero(first)
    out = df.iloc[heads][list(cols)].reset_index(drop=True)
    if len(heads):
        out[START] = np.fmin.reduceat(start, heads)
        out[END] = np.fmax.reduceat(end, heads)
    else:
        out[START], out[END] = np.zeros(0), np.zeros(0)
    return out


def from_change_points(df: pd.DataFrame, keys: Sequence[str], run_end: float | None,
                       ts: str = "ts", order: Sequence[str] = ("seq",)) -> pd.DataFrame:
    """Turn change points into intervals: each row holds from its ``ts`` until the next row of
    the same key (ties broken by ``order``), the last one until ``run_end``. Output: ``df``'s
    columns plus ``start``, ``end``.

    Rows used only as terminators (e.g. a ``node.exit`` cutting a client's view) should be in
    ``df`` too and filtered out by the caller afterwards."""
    out, gid = ordered(df, keys, [ts, *order])
    t = out[ts].to_numpy(float)
    out = out.assign(start=t, end=_next(t, gid, num(run_end)))
    return out[out[END].to_numpy() > t].reset_index(drop=True)


def merge_intervals(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``keys, start, end``: union of possibly overlapping intervals per key, as disjoint
    intervals. Touching intervals (``[a, b)`` and ``[b, c)``) merge."""
    keys = list(keys)
    out, gid = ordered(df[[*keys, START, END]], keys, [START, END])
    start, end = out[START].to_numpy(float), out[END].to_numpy(float)
    prev_max = pd.Series(end).groupby(gid).cummax().to_numpy(float)  # up to and including the row
    prev = np.r_[np.nan, prev_max[:-1]] if len(end) else prev_max
    prev[_first_of_group(gid)] = np.nan
    opens = np.isnan(prev) | (start > prev)
    return _blocks(opens, out, keys, start, end)


def elementary_segments(boundaries: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``keys, start, end``: each key's time line cut at its boundary points ``t``:
    consecutive distinct points give the segments on which nothing changes."""
    keys = list(keys)
    pts = boundaries[[*keys, "t"]].dropna(subset=["t"]).drop_duplicates()
    out, gid = ordered(pts, keys, ["t"])
    t = out["t"].to_numpy(float)
    out = out[keys].assign(start=t, end=_next(t, gid, np.nan))
    return out[~np.isnan(out[END].to_numpy())].reset_index(drop=True)


def compress(df: pd.DataFrame, keys: Sequence[str], value: str) -> pd.DataFrame:
    """``keys, value, start, end``: adjacent intervals of one key with the same (hashable)
    ``value`` merged. A null value never merges."""
    keys = list(keys)
    out, gid = ordered(df, keys, [START])
    start, end = out[START].to_numpy(float), out[END].to_numpy(float)
    codes, _ = pd.factorize(out[value])  # -1: null
    same = np.zeros(len(out), dtype=bool)
    if len(out):
        same[1:] = (codes[1:] == codes[:-1]) & (codes[1:] >= 0) & (end[:-1] == start[1:])
    opens = ~same | _first_of_group(gid)
    return _blocks(opens, out, [*keys, value], start, end)


def sorted_sets(rows: np.ndarray, names: np.ndarray, n: int) -> pd.Series:
    """A set-valued column: per row ``0..n-1``, the tuple of sorted distinct ``names`` given
    at that row (``rows[i]`` is the row of ``names[i]``), nulls last as Spark's ``array_sort``;
    ``()`` for a row without any."""
    codes, words = pd.factorize(np.asarray(names, dtype=object), sort=True)  # -1: null
    vocab = [*words.tolist(), None]
    codes = np.where(codes < 0, len(vocab) - 1, codes)
    rows = np.asarray(rows, dtype=np.int64)
    order = np.lexsort((codes, rows))
    r, c = rows[order], codes[order]
    keep = np.r_[True, (r[1:] != r[:-1]) | (c[1:] != c[:-1])] if len(r) else np.zeros(0, dtype=bool)
    items = [vocab[k] for k in c[keep].tolist()]
    bounds = np.searchsorted(r[keep], np.arange(n + 1)).tolist()
    return pd.Series([tuple(items[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)], dtype=object)


def _ranks(*arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays' values as dense ranks over all of them (order-preserving, exact)."""
    _, inv = np.unique(np.concatenate(arrays), return_inverse=True)
    cuts = np.cumsum([len(a) for a in arrays])[:-1]
    return np.split(inv.astype(np.int64), cuts)


def overlap_index(left: pd.DataFrame, right: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(i, j)`` of every pair of a ``left`` and a ``right`` interval with equal
    (non-null) keys that overlap (``a.start < b.end`` and ``b.start < a.end``), in ``left``'s
    order. Sort-based: each left interval's candidates are a contiguous range of ``right``
    sorted by start, bounded with the running maximum of its ends."""
    keys = list(keys)
    ls, le = left[START].to_numpy(float), left[END].to_numpy(float)
    rs, re = right[START].to_numpy(float), right[END].to_numpy(float)
    lok = ~(np.isnan(ls) | np.isnan(le))
    rok = ~(np.isnan(rs) | np.isnan(re))
    if keys:
        lok &= left[keys].notna().all(axis=1).to_numpy()
        rok &= right[keys].notna().all(axis=1).to_numpy()
        codes = group_codes(pd.concat([left[keys], right[keys]], ignore_index=True), keys)
    else:
        codes = np.zeros(len(left) + len(right), dtype=np.int64)
    lc, rc = codes[:len(left)], codes[len(left):]
    li, ri = np.flatnonzero(lok), np.flatnonzero(rok)
    if not len(li) or not len(ri):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ri = ri[np.lexsort((rs[ri], rc[ri]))]
    cm = pd.Series(re[ri]).groupby(rc[ri]).cummax().to_numpy(float)
    r_start, r_cm, q_start, q_end = _ranks(rs[ri], cm, ls[li], le[li])
    width = int(max(r_start.max(initial=0), r_cm.max(), q_start.max(), q_end.max())) + 1
    rkey, qkey = rc[ri] * width, lc[li] * width
    hi = np.searchsorted(rkey + r_start, qkey + q_end, side="left")  # right rows with start < a.end
    lo = np.searchsorted(rkey + r_cm, qkey + q_start, side="right")  # earlier rows all end <= a.start
    counts = np.maximum(hi - lo, 0)
    pos = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    i = np.repeat(li, counts)
    keep = re[ri[pos]] > ls[i]
    return i[keep], ri[pos[keep]]


def overlap_pieces(left: pd.DataFrame, right: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``keys, <left's other columns>, <right's other columns>, start, end``: the pieces where
    an interval of ``left`` and one of ``right`` with the same keys overlap,
    ``[max(starts), min(ends))``. When each side is disjoint per key, so are the pieces."""
    keys = list(keys)
    others_a = [c for c in left.columns if c not in (*keys, START, END)]
    others_b = [c for c in right.columns if c not in (*keys, START, END)]
    if clash := set(others_a) & set(others_b):
        raise ValueError(f"overlap_pieces: columns on both sides: {sorted(clash)}")
    i, j = overlap_index(left, right, keys)
    a = left.iloc[i][[*keys, *others_a]].reset_index(drop=True)
    b = right.iloc[j][others_b].reset_index(drop=True)
    out = pd.concat([a, b], axis=1)
    out[START] = np.maximum(left[START].to_numpy(float)[i], right[START].to_numpy(float)[j])
    out[END] = np.minimum(left[END].to_numpy(float)[i], right[END].to_numpy(float)[j])
    return out


def runs_of(df: pd.DataFrame, keys: Sequence[str], flag: str) -> pd.DataFrame:
    """``keys, start, end``: maximal contiguous stretches where boolean column ``flag`` holds
    (null: does not), per key. Input: disjoint intervals per key; two flagged intervals
    belong to one run when the second starts exactly where the first ended."""
    keys = list(keys)
    out, gid = ordered(df, keys, [START])
    start, end = out[START].to_numpy(float), out[END].to_numpy(float)
    f = out[flag].fillna(False).to_numpy(bool)
    cont = np.zeros(len(out), dtype=bool)
    if len(out):
        cont[1:] = f[:-1] & (end[:-1] == start[1:])
    cont &= ~_first_of_group(gid)
    opens = (f & ~cont)[f]
    return _blocks(opens, out[f].reset_index(drop=True), keys, start[f], end[f])
