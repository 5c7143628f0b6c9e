"""The small tables the plots draw, from one run's analysis tables (the query half of
``reports/plotdata.py``).

Every table is aggregated here (state runs instead of raw pieces, time bins instead of sends),
so what the report draws stays small however large the run: the lane plot keeps the
``max_topics`` stalest topics and at most ``max_lanes`` client views per topic (the stalest),
the staleness histogram and the availability plot the first ``max_durations`` + 1 and
``max_windows`` + 1 rows (one more than drawn, so the report can tell that rows were left out).
Times are seconds since the run's first event (wall), which is what the x axes show.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rmqemu.reports.core.availability import measured_attempts
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.core.sends import latency_over_time, misrouted_over_time

LANE_COLUMNS = ["topic", "lane", "kind", "state", "label", "start_s", "end_s"]


def _order(df: pd.DataFrame, by: Sequence[tuple[str, bool]]) -> pd.DataFrame:
    """``df`` sorted as Spark's ``orderBy``: ``(column, ascending)``; an ascending column puts
    nulls first, a descending one last."""
    if df.empty:
        return df
    keys = []
    for col, asc in by:
        r = df[col].rank(method="dense", na_option="keep").to_numpy(dtype=float)
        keys.append(np.where(np.isnan(r), 0.0, r) if asc else np.where(np.isnan(r), np.inf, -r))
    return df.iloc[np.lexsort(keys[::-1])]


def _rank(df: pd.DataFrame, keys: list[str], by: Sequence[tuple[str, bool]]) -> pd.Series:
    """Spark's ``row_number`` over ``partitionBy(keys).orderBy(by)`` (1 = first), aligned to ``df``."""
    s = _order(df, by)
    return (s.groupby(keys, dropna=False, sort=False).cumcount() + 1).reindex(df.index)


def _seconds(ms: pd.Series, t0: float) -> np.ndarray:
    return ((ms.astype("float64") - t0) / 1000.0).to_numpy(dtype=float)


def _join(items: object) -> str:
    """Spark's ``array_join(coalesce(xs, []), ", ")``: null items skipped."""
    return ", ".join(x for x in (items if isinstance(items, (list, tuple, np.ndarray)) else ()) if isinstance(x, str))


def state(pieces: pd.DataFrame) -> np.ndarray:
    """State of a view on each piece, as the lane plot colours it: both/over/under/fresh."""
    over = pieces["over"].fillna(False).to_numpy(dtype=bool)
    under = pieces["under"].fillna(False).to_numpy(dtype=bool)
    return np.select([over & under, over, under], ["both", "over", "under"], "fresh").astype(object)


def compress_states(pieces: pd.DataFrame, who: str) -> pd.DataFrame:
    """``<who>, topic, state, start, end``: adjacent pieces of one (who, topic) with the same
    state merged (adjacent: the next starts where the previous ended)."""
    keys = [who, "topic"]
    df = pieces[[*keys, "start", "end"]].assign(state=state(pieces))
    if df.empty:
        return df[[*keys, "state", "start", "end"]].reset_index(drop=True)
    df = df.assign(_k=df.groupby(keys, dropna=False, sort=False).ngroup().to_numpy())
    df = df.iloc[np.lexsort((df["start"].to_numpy(dtype=float), df["_k"].to_numpy()))]
    k, st = df["_k"].to_numpy(), df["state"].to_numpy()
    start, end = df["start"].to_numpy(dtype=float), df["end"].to_numpy(dtype=float)
    opens = np.r_[True, (k[1:] != k[:-1]) | (st[1:] != st[:-1]) | (end[:-1] != start[1:])]
    df = df.assign(_grp=np.cumsum(opens))
    runs = df.groupby("_grp", sort=True).agg(**{who: (who, "first"), "topic": ("topic", "first"),
                                                "state": ("state", "first"), "start": ("start", "min"),
                                                "end": ("end", "max")})
    return runs.reset_index(drop=True)


def _topic_staleness(client_staleness: pd.DataFrame) -> pd.DataFrame:
    """``topic, s``: total client staleness per topic (the lane plot shows the stalest)."""
    s = client_staleness.groupby("topic", dropna=False, sort=True)["stale_ms"].sum(min_count=1)
    return s.rename("s").reset_index().astype({"s": "float64"})


def _top_topics(client_staleness: pd.DataFrame, max_topics: int) -> pd.Series:
    """The ``max_topics`` stalest topics (ties by name) that a join can match (non-null)."""
    top = _order(_topic_staleness(client_staleness), [("s", False), ("topic", True)]).head(max_topics)
    return top["topic"].dropna()


def _lane_rank(client_staleness: pd.DataFrame, topics: pd.Series) -> pd.DataFrame:
    """``topic, lane, stale_ms, rank``: client lanes of ``topics``, stalest first per topic."""
    cs = client_staleness.loc[client_staleness["topic"].isin(topics)].reset_index(drop=True)
    df = pd.DataFrame({"topic": cs["topic"], "lane": cs["client"], "stale_ms": cs["stale_ms"]})
    df["rank"] = _rank(df, ["topic"], [("stale_ms", False), ("lane", True)]).astype("int64")
    return df.reset_index(drop=True)


def _lanes(t0: float, top: pd.Series, max_lanes: int, client_staleness: pd.DataFrame,
           client_pieces: pd.DataFrame, namesrv_pieces: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """Truth, namesrv and client lanes of the top topics (in that order)."""
    def states(pieces: pd.DataFrame, who: str) -> pd.DataFrame:
        runs = compress_states(pieces.loc[pieces["topic"].isin(top)], who)
        return pd.DataFrame({"topic": runs["topic"], "lane": runs[who], "kind": who, "state": runs["state"],
                             "label": "", "start_s": _seconds(runs["start"], t0), "end_s": _seconds(runs["end"], t0)})

    ranked = _lane_rank(client_staleness, top)
    kept = ranked.loc[ranked["rank"] <= max_lanes, ["topic", "lane"]].dropna()
    if "holder" in client_staleness:  # a proxy's or a gRPC client's view: its lane says so
        held = client_staleness.drop_duplicates("client")
        names = {"proxy": "proxy", "grpc": "gRPC via "}
        kept = kept.merge(pd.DataFrame({"lane": held["client"], "_label": [
            names.get(h, "") + (v if h == "grpc" and isinstance(v, str) else "")
            for h, v in zip(held["holder"], held["via"], strict=True)]}), on="lane", how="left")
    tr = truth.loc[truth["topic"].isin(top)]
    parts = [
        pd.DataFrame({"topic": tr["topic"], "lane": "truth", "kind": "truth", "state": "truth",
                      "label": [_join(b) for b in tr["brokers"]], "start_s": _seconds(tr["start"], t0),
                      "end_s": _seconds(tr["end"], t0)}),
        states(namesrv_pieces, "namesrv"),
        states(client_pieces, "client").merge(kept, on=["topic", "lane"]),
    ]
    if "_label" in parts[2]:
        parts[2] = parts[2].assign(label=parts[2].pop("_label").fillna(""))
    parts = [p.sort_values(["topic", "lane", "start_s"]) for p in parts]
    return pd.concat([p[LANE_COLUMNS] for p in parts], ignore_index=True).astype({"start_s": float, "end_s": float})


def _binned(df: pd.DataFrame, bin_ms: float, cols: list[str]) -> pd.DataFrame:
    out = df.sort_values(["bin", *[c for c in cols if c == "reason"]]).reset_index(drop=True)
    out.insert(0, "t_s", (out["bin"].to_numpy(dtype=float) + 0.5) * bin_ms / 1000.0)
    return out[["t_s", *cols]]


def _availability(sends: pd.DataFrame, windows: pd.DataFrame, t0: float, end: float,
                  max_windows: int) -> dict[str, pd.DataFrame]:
    """Each producer's span of measured attempts and its unavailability windows (the run's
    ``windows``: the first ``max_windows`` + 1 by producer, topic, start)."""
    att = measured_attempts(sends, end, ["producer", "ts", "outcome"])
    g = att.groupby("producer", dropna=False, sort=True)["ts"]
    spans = pd.DataFrame({"first_s": (g.min() - t0) / 1000.0, "last_s": (g.max() - t0) / 1000.0,
                          "attempts": g.size()}).reset_index()
    spans = spans.astype({"first_s": float, "last_s": float, "attempts": "int64"})
    windows = _order(windows, [("producer", True), ("topic", True), ("start", True)])
    windows = windows.head(max_windows + 1)
    return {"p.producers": spans[["producer", "first_s", "last_s", "attempts"]],
            "p.unavailable": pd.DataFrame({"producer": windows["producer"], "topic": windows["topic"],
                                           "start_s": _seconds(windows["start"], t0),
                                           "end_s": _seconds(windows["end"], t0)}).reset_index(drop=True)}


def plot_tables(t: Mapping[str, pd.DataFrame], info: RunInfo, max_topics: int = 6, max_lanes: int = 24,
                max_durations: int = 200_000, max_windows: int = 100_000) -> dict[str, pd.DataFrame]:
    """The small tables the plots draw, by name (``p.latency``, ``p.faults``, ``p.misrouted``,
    ``p.topics``, ``p.lanes``, ``p.lane_counts``, ``p.durations``, ``p.intervals``,
    ``p.producers``, ``p.unavailable``), from the analysis tables ``t`` of one run (``sends``
    may be absent: ``classified`` holds every column of it; ``windows``: the run's
    unavailability windows)."""
    t0, bin_ms = info.run_start, info.bin_ms
    sends = t["sends"] if "sends" in t else t["classified"]
    cs, faults, ci = t["client_staleness"], t["faults"], t["client_intervals"]
    top = _top_topics(cs, max_topics)
    counts = _lane_rank(cs, top).groupby("topic", sort=True).size().rename("count").reset_index()
    durations = _order(ci, [("client", True), ("topic", True), ("start", True)]).head(max_durations + 1)
    return {
        "p.latency": _binned(latency_over_time(sends, t0, bin_ms), bin_ms,
                             ["n", "p50_ms", "p99_ms", "max_ms", "timeouts"]),
        "p.faults": pd.DataFrame({
            "fault_id": faults["fault_id"], "fault": faults["fault"],
            "targets": [_join(x) for x in faults["targets"]], "start_s": _seconds(faults["start"], t0),
            "end_s": _seconds(faults["end"], t0), "has_end": faults["has_end"]}).reset_index(drop=True),
        "p.misrouted": _binned(misrouted_over_time(t["classified"], t0, bin_ms), bin_ms, ["reason", "sends"]),
        "p.topics": _topic_staleness(cs),
        "p.lanes": _lanes(t0, top, max_lanes, cs, t["client_pieces"], t["namesrv_pieces"], t["truth"]),
        "p.lane_counts": counts.astype({"count": "int64"}),
        "p.durations": durations[["duration_ms"]].reset_index(drop=True),
        "p.intervals": pd.DataFrame({"n": np.array([len(ci)] if len(ci) else [], dtype="int64")}),
        **_availability(sends, t["windows"], t0, info.measure_end, max_windows),
    }
