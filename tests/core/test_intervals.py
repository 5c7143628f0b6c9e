"""Interval helpers of ``reports.core.intervals`` on tiny inline tables, with exact rows: ties
at one ``ts``, touching intervals, an interval contained in another, the open end at the run
end, gaps; plus empty inputs and key-less time lines.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core import intervals as iv


def rows(df: pd.DataFrame, *cols: str) -> list[tuple[Any, ...]]:
    """The rows of ``df`` restricted to ``cols``, as sorted plain tuples."""
    return sorted(tuple(v.item() if isinstance(v, np.generic) else v for v in r)
                  for r in df[list(cols)].itertuples(index=False))


def ivs(data: list[tuple[Any, ...]], cols: str = "k start end") -> pd.DataFrame:
    df = pd.DataFrame(data, columns=cols.split())
    return df.astype({c: float for c in ("start", "end", "ts", "t") if c in df.columns})


# -- from_change_points ----------------------------------------------------------------------

def test_change_points_hold_until_the_next_one_and_the_last_until_the_run_end():
    df = ivs([("a", 20, 3), ("a", 10, 1), ("a", 20, 2), ("a", 50, 4), ("b", 30, 1)], "k ts seq")
    out = iv.from_change_points(df, ["k"], run_end=50.0)
    # seq 2 and 3 share ts 20 (given out of order): seq breaks the tie, so seq 2 lasts
    # [20, 20) and is dropped; seq 4 starts at the run end: [50, 50) is dropped too.
    assert rows(out, "k", "seq", "start", "end") == [("a", 1, 10.0, 20.0), ("a", 3, 20.0, 50.0),
                                                     ("b", 1, 30.0, 50.0)]
    assert list(out.columns) == ["k", "ts", "seq", "start", "end"]


def test_change_points_without_keys_one_time_line_and_no_run_end():
    df = ivs([("a", 5, 2), ("b", 0, 1), ("c", 9, 3)], "k ts seq")
    assert rows(iv.from_change_points(df, [], run_end=10.0), "k", "start", "end") == [
        ("a", 5.0, 9.0), ("b", 0.0, 5.0), ("c", 9.0, 10.0)]
    # no run end (None): the last row of each key holds nowhere
    assert rows(iv.from_change_points(df, [], run_end=None), "k", "start", "end") == [("a", 5.0, 9.0), ("b", 0.0, 5.0)]


def test_change_points_of_nothing():
    out = iv.from_change_points(ivs([], "k ts seq"), ["k"], run_end=10.0)
    assert out.empty and list(out.columns) == ["k", "ts", "seq", "start", "end"]


# -- merge_intervals -------------------------------------------------------------------------

def test_merge_overlapping_touching_and_contained_intervals():
    df = ivs([
        ("a", 0, 10), ("a", 5, 15), ("a", 15, 20),     # overlap, then touching at 15: one interval
        ("a", 25, 30), ("a", 26, 28),                   # contained: absorbed
        ("b", 0, 100), ("b", 10, 20), ("b", 30, 40),    # after a contained one ends, still inside [0, 100)
        ("c", 0, 10), ("c", 10.5, 11),                  # a gap keeps them apart
    ])
    out = iv.merge_intervals(df, ["k"])
    assert list(out.columns) == ["k", "start", "end"]
    assert rows(out, "k", "start", "end") == [
        ("a", 0.0, 20.0), ("a", 25.0, 30.0), ("b", 0.0, 100.0), ("c", 0.0, 10.0), ("c", 10.5, 11.0)]


def test_merge_without_keys_and_of_nothing():
    df = ivs([("x", 30, 40), ("y", 0, 10), ("z", 10, 12)])
    assert rows(iv.merge_intervals(df, []), "start", "end") == [(0.0, 12.0), (30.0, 40.0)]
    out = iv.merge_intervals(ivs([]), ["k"])
    assert out.empty and list(out.columns) == ["k", "start", "end"]


def test_merge_keeps_a_null_key_as_its_own_group():
    df = ivs([(None, 0, 10), (None, 5, 20), ("a", 0, 1)])
    assert rows(iv.merge_intervals(df, ["k"]).fillna("-"), "k", "start", "end") == [
        ("-", 0.0, 20.0), ("a", 0.0, 1.0)]


# -- elementary_segments ---------------------------------------------------------------------

def test_elementary_segments_between_distinct_points():
    pts = ivs([("a", 30), ("a", 0), ("a", 10), ("a", 10), ("b", 5)], "k t")
    # repeated points cut once; a single point makes no segment
    out = iv.elementary_segments(pts, ["k"])
    assert list(out.columns) == ["k", "start", "end"]
    assert rows(out, "k", "start", "end") == [("a", 0.0, 10.0), ("a", 10.0, 30.0)]
    assert rows(iv.elementary_segments(pts, []), "start", "end") == [(0.0, 5.0), (5.0, 10.0), (10.0, 30.0)]
    assert iv.elementary_segments(ivs([], "k t"), ["k"]).empty


# -- compress --------------------------------------------------------------------------------

def test_compress_merges_only_adjacent_equal_values():
    df = ivs([
        ("t", 0, 10, ("a",)), ("t", 10, 20, ("a",)),   # adjacent, equal: one
        ("t", 20, 30, ("a", "b")),                      # a different value
        ("t", 30, 40, ("a",)),                          # back to the first value: a new piece
        ("t", 45, 50, ("a",)),                          # equal but after a gap: apart
        ("u", 0, 10, ()), ("u", 10, 20, ()),            # empty sets (no broker) merge like any value
    ], "k start end v")
    out = iv.compress(df, ["k"], "v")
    assert list(out.columns) == ["k", "v", "start", "end"]
    assert rows(out, "k", "start", "end", "v") == [
        ("t", 0.0, 20.0, ("a",)), ("t", 20.0, 30.0, ("a", "b")), ("t", 30.0, 40.0, ("a",)),
        ("t", 45.0, 50.0, ("a",)), ("u", 0.0, 20.0, ())]


def test_compress_without_keys_given_out_of_order_and_of_nothing():
    df = ivs([(10, 20, ("a",)), (0, 10, ("a",)), (20, 25, ("b",))], "start end v")
    assert rows(iv.compress(df, [], "v"), "start", "end", "v") == [(0.0, 20.0, ("a",)), (20.0, 25.0, ("b",))]
    assert iv.compress(ivs([], "k start end v"), ["k"], "v").empty


# -- overlap_pieces --------------------------------------------------------------------------

def test_overlap_pieces_are_the_intersections_per_key():
    left = ivs([("T", 0, 100, "v1"), ("T", 100, 150, "v2"), ("U", 0, 10, "u"), ("V", 0, 10, "x")], "k start end view")
    right = ivs([("T", 0, 30, "b1"), ("T", 30, 60, "b2"), ("T", 60, 200, "b3"),
                 ("U", 10, 20, "u2")], "k start end truth")   # touches U's [0, 10) at 10: no piece; V has no truth
    out = iv.overlap_pieces(left, right, ["k"])
    assert list(out.columns) == ["k", "view", "truth", "start", "end"]
    assert rows(out, "k", "start", "end", "view", "truth") == [
        ("T", 0.0, 30.0, "v1", "b1"), ("T", 30.0, 60.0, "v1", "b2"), ("T", 60.0, 100.0, "v1", "b3"),
        ("T", 100.0, 150.0, "v2", "b3")]


def test_overlap_pieces_with_overlapping_right_intervals_and_null_keys():
    # right not disjoint: a long interval after short ones must still be found
    left = ivs([("T", 50, 60, "l"), (None, 0, 100, "n")], "k start end a")
    right = ivs([("T", 0, 100, "long"), ("T", 10, 20, "short"), ("T", 55, 56, "in"), ("T", 60, 70, "after"),
                 (None, 0, 100, "null")], "k start end b")
    out = iv.overlap_pieces(left, right, ["k"])   # a null key matches nothing
    assert rows(out, "k", "a", "b", "start", "end") == [("T", "l", "in", 55.0, 56.0), ("T", "l", "long", 50.0, 60.0)]


def test_overlap_pieces_without_keys_and_of_nothing():
    left = ivs([(0, 10, "x")], "start end a")
    right = ivs([(5, 15, "y"), (10, 20, "z")], "start end b")
    assert rows(iv.overlap_pieces(left, right, []), "a", "b", "start", "end") == [("x", "y", 5.0, 10.0)]
    out = iv.overlap_pieces(left.iloc[:0], right, [])
    assert out.empty and list(out.columns) == ["a", "b", "start", "end"]


# -- runs_of ---------------------------------------------------------------------------------

def test_runs_of_contiguous_flagged_intervals():
    df = ivs([
        ("c", 0, 10, False), ("c", 10, 20, True), ("c", 20, 30, True),   # one run [10, 30)
        ("c", 30, 40, False), ("c", 40, 50, True),                        # broken by an unflagged piece
        ("c", 55, 60, True),                                              # broken by a gap
        ("d", 0, 10, True),
    ], "k start end f")
    out = iv.runs_of(df, ["k"], "f")
    assert list(out.columns) == ["k", "start", "end"]
    assert rows(out, "k", "start", "end") == [
        ("c", 10.0, 30.0), ("c", 40.0, 50.0), ("c", 55.0, 60.0), ("d", 0.0, 10.0)]


def test_runs_of_do_not_span_keys_and_a_null_flag_breaks_a_run():
    df = ivs([("c", 0, 10, True), ("d", 10, 20, True), ("d", 20, 30, None), ("d", 30, 40, True)], "k start end f")
    df["f"] = df["f"].astype("boolean")
    assert rows(iv.runs_of(df, ["k"], "f"), "k", "start", "end") == [("c", 0.0, 10.0), ("d", 10.0, 20.0),
                                                                     ("d", 30.0, 40.0)]
    assert rows(iv.runs_of(df, [], "f"), "start", "end") == [(0.0, 20.0), (30.0, 40.0)]
    assert iv.runs_of(df.iloc[:0], ["k"], "f").empty


def test_overlap_pieces_equal_a_brute_force_cross_join():
    """The sort-based join against the definition, on seeded random (overlapping, tied) intervals."""
    rng = np.random.default_rng(7)

    def random_ivs(n: int, col: str) -> pd.DataFrame:
        s = rng.integers(0, 50, n).astype(float)
        return pd.DataFrame({"k": rng.choice(["a", "b", "c"], n), "start": s, "end": s + rng.integers(1, 20, n),
                             col: np.arange(n)})

    for _ in range(20):
        left, right = random_ivs(30, "i"), random_ivs(25, "j")
        want = sorted((a.k, a.i, b.j, max(a.start, b.start), min(a.end, b.end))
                      for a in left.itertuples() for b in right.itertuples()
                      if a.k == b.k and a.start < b.end and b.start < a.end)
        assert rows(iv.overlap_pieces(left, right, ["k"]), "k", "i", "j", "start", "end") == want
