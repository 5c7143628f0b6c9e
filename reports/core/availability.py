"""Availability and per-fault impact of one run: unavailability windows per (producer, topic),
and what each fault cost the producers (``rto_ms``, ``failed_sends``, ``misrouted_sends`` beside
its ``converged_ms``). The rules (which attempts count, window ends, attribution windows) are
docs/design.md §9, "Availability and per-fault impact".

Windows are found per (producer, topic) by sorting the attempts and a running minimum over the
reversed order (each attempt's next ok one), so a producer's windows depend on its own
attempts only: the engine computes them per share of nodes (:func:`unavailable_windows`) and
the impact per fault over the whole run (:func:`with_impact`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

#: Outcomes that carry no answer from a broker: left out of availability (see above).
NO_ANSWER_OUTCOMES: tuple[str, ...] = ("oneway",)

_PAIR = ["producer", "topic"]


def _measured(sends: pd.DataFrame, measure_end: float | None) -> np.ndarray:
    """Which attempts availability is judged on: those of the measured run (none when
    ``measure_end`` is None) that expect an answer."""
    answered = ~sends["outcome"].isin(NO_ANSWER_OUTCOMES).to_numpy(dtype=bool)
    ts = sends["ts"].to_numpy(dtype=float)
    return (np.zeros(len(sends), dtype=bool) if measure_end is None else ts <= float(measure_end)) & answered


def measured_attempts(sends: pd.DataFrame, measure_end: float | None,
                      columns: list[str] | None = None) -> pd.DataFrame:
    """The attempts availability is judged on (:func:`_measured`), plus boolean ``ok``. Keeps
    every column of ``sends``, or only ``columns``."""
    out = (sends if columns is None else sends[columns]).loc[_measured(sends, measure_end)].copy()
    out["ok"] = (out["outcome"] == "ok").to_numpy(dtype=bool)
    return out


def _group_codes(df: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """A number per distinct ``keys`` (a null is a value like any other, as Spark's partitions)."""
    if df.empty:
        return np.zeros(0, dtype=np.int64)
    return df.groupby(keys, dropna=False, sort=True).ngroup().to_numpy(dtype=np.int64)


def unavailable_windows(sends: pd.DataFrame, measure_end: float | None) -> pd.DataFrame:
    """``producer, topic, start, end``: the unavailability windows (docs/design.md §9).

    A window opens at a non-ok attempt that is the pair's first or follows an ok one, and
    ends at the pair's next ok attempt (strictly later in ``(ts, seq)`` order), else at the
    measured end; windows of length 0 are dropped. Rows sorted by pair, then start."""
    att = measured_attempts(sends, measure_end, [c for c in (*_PAIR, "ts", "seq", "outcome") if c in sends])
    if att.empty:
        return pd.DataFrame({"producer": pd.Series(dtype=object), "topic": pd.Series(dtype=object),
                             "start": pd.Series(dtype=float), "end": pd.Series(dtype=float)})
    code = _group_codes(att, _PAIR)
    ts = att["ts"].to_numpy(dtype=float)
    # a null seq sorts first, as in Spark's ascending order
    seq = att["seq"].astype("Float64").to_numpy(dtype=float, na_value=-np.inf) if "seq" in att else np.zeros(len(att))
    order = np.lexsort((seq, ts, code))
    code, ts, ok = code[order], ts[order], att["ok"].to_numpy(dtype=bool)[order]
    att = att.iloc[order]
    first = np.r_[True, code[1:] != code[:-1]]
    prev_ok = np.r_[True, ok[:-1]]
    opens = ~ok & (first | prev_ok)
    # next ok ts strictly after each attempt: a running minimum over the pair in reverse
    ok_ts = pd.Series(np.where(ok, ts, np.inf)[::-1])
    incl = ok_ts.groupby(code[::-1]).cummin().to_numpy()[::-1]  # min over this attempt and later ones
    last = np.r_[code[1:] != code[:-1], True]
    next_ok = np.where(last, np.inf, np.r_[incl[1:], np.inf])
    end = np.where(np.isinf(next_ok), float(measure_end), next_ok)  # type: ignore[arg-type]
    keep = opens & (end > ts)
    return pd.DataFrame({"producer": att["producer"].to_numpy(dtype=object)[keep],
                         "topic": att["topic"].to_numpy(dtype=object)[keep],
                         "start": ts[keep], "end": end[keep]})


def availability_by_pair(sends: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """``producer, topic, windows, total_ms, max_ms`` for every (producer, topic) that made an
    attempt; a pair never unavailable has ``windows`` 0 (and a pair with a null key, which a
    Spark join never matches, too). Rows sorted by pair."""
    pairs = sends[_PAIR].drop_duplicates().sort_values(_PAIR, na_position="first", kind="stable")
    pairs = pairs.reset_index(drop=True).astype(object)
    w = windows.loc[windows[_PAIR].notna().all(axis=1), _PAIR].astype(object)
    w["_d"] = (windows["end"] - windows["start"]).astype(float)
    per = w.groupby(_PAIR, sort=False).agg(windows=("_d", "size"), total_ms=("_d", "sum"), max_ms=("_d", "max"))
    out = pairs.merge(per.reset_index(), on=_PAIR, how="left") if len(per) else pairs.assign(
        windows=np.nan, total_ms=np.nan, max_ms=np.nan)
    return out.assign(windows=out["windows"].fillna(0).astype(np.int64),
                      total_ms=out["total_ms"].fillna(0.0).astype(float),
                      max_ms=out["max_ms"].fillna(0.0).astype(float))[[*_PAIR, "windows", "total_ms", "max_ms"]]


def attribution_end(start: np.ndarray, end: np.ndarray, converged_ms: np.ndarray) -> np.ndarray:
    """Where each fault's attribution window ends (docs/design.md §9): the later of its end and its
    start plus ``converged_ms`` (null: 0)."""
    return np.fmax(end, start + np.nan_to_num(converged_ms, nan=0.0))


def with_impact(rows: pd.DataFrame, faults: pd.DataFrame, windows: pd.DataFrame, classified: pd.DataFrame,
                measure_end: float | None) -> pd.DataFrame:
    """``rows`` (one per fault, with at least ``fault_id, start, end, converged_ms``) plus
    ``impact_end`` (the attribution window's end), ``rto_ms``, ``failed_sends`` and
    ``misrouted_sends``.

    ``rto_ms``: the longest unavailability window *starting* in the attribution window
    ``[start, max(end, start + converged_ms))`` (0 if none); ``failed_sends`` /
    ``misrouted_sends``: non-ok / misrouted attempts (of the measured run) whose ``ts`` is in
    it. An attempt or window counts for every fault whose window holds it.

    A row keeps its place if ``faults`` has its ``fault_id`` or something lies in its window;
    other rows are dropped (the rows are the fault table's own, so none is)."""
    t = classified["ts"].to_numpy(dtype=float)
    measured = _measured(classified, measure_end)  # the attempts of measured_attempts, as a mask
    failed = measured & ~(classified["outcome"] == "ok").to_numpy(dtype=bool)
    mis = measured & classified["reason"].notna().to_numpy(dtype=bool)
    t, failed, mis = t[failed | mis], failed[failed | mis], mis[failed | mis]
    w_start = windows["start"].to_numpy(dtype=float)
    w_len = windows["end"].to_numpy(dtype=float) - w_start
    start = rows["start"].to_numpy(dtype=float)
    conv = rows["converged_ms"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    impact_end = attribution_end(start, rows["end"].to_numpy(dtype=float), conv)
    ids = rows["fault_id"]
    known = (ids.isin(faults["fault_id"].dropna()) & ids.notna()).to_numpy(dtype=bool)
    rto, n_failed, n_mis, keep = [], [], [], []
    for lo, hi, own in zip(start, impact_end, known, strict=True):  # the few fault rows
        inside, w_in = (t >= lo) & (t < hi), (w_start >= lo) & (w_start < hi)
        rto.append(float(w_len[w_in].max()) if w_in.any() else 0.0)
        n_failed.append(int((inside & failed).sum()))
        n_mis.append(int((inside & mis).sum()))
        keep.append(bool(own or inside.any() or w_in.any()))
    out = rows.assign(impact_end=impact_end, rto_ms=np.array(rto, dtype=float),
                      failed_sends=np.array(n_failed, dtype=np.int64), misrouted_sends=np.array(n_mis, dtype=np.int64))
    return out.loc[np.array(keep, dtype=bool)].reset_index(drop=True)
