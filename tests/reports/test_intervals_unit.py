"""Interval arithmetic (``reports.intervals``) and the interval tables built on it (lives,
truth, client views), each on a tiny inline DataFrame with the exact rows expected.

Every state is a set of half-open intervals ``[start, end)``; these tests pin the places where
an off-by-one would quietly shift a metric: ties at one ``ts``, touching intervals, an interval
contained in another, the open end at the run end, gaps, and clipping to a node's lives.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from reports import intervals as iv
from reports.staleness import client_views
from reports.truth import lives, truth
from tests.reports.frames import frame, rows

IV = "k string, start double, end double"
EVENTS = "node string, kind string, ts double, seq long"


# -- from_change_points ----------------------------------------------------------------------

def test_change_points_hold_until_the_next_one_and_the_last_until_the_run_end(spark):
    df = frame(spark, "k string, ts double, seq long",
               [("a", 20, 3), ("a", 10, 1), ("a", 20, 2), ("a", 50, 4), ("b", 30, 1)])
    out = iv.from_change_points(df, ["k"], run_end=50.0)
    # seq 2 and 3 share ts 20 (given out of order): seq breaks the tie, so seq 2 lasts
    # [20, 20) and is dropped; seq 4 starts at the run end: [50, 50) is dropped too.
    assert rows(out, "k", "seq", "start", "end") == [("a", 1, 10.0, 20.0), ("a", 3, 20.0, 50.0),
                                                     ("b", 1, 30.0, 50.0)]


def test_lives_from_starts_and_exits(spark):
    ev = frame(spark, EVENTS, [
        ("n1", "node.start", 0, 1), ("n1", "node.exit", 100, 2), ("n1", "node.start", 150, 3),  # restarted
        ("n2", "node.start", 0, 1), ("n2", "node.start", 50, 2),      # a second start ends the first life
        ("n2", "node.exit", 80, 3), ("n2", "node.exit", 80, 4),       # launcher and injector both log the exit
        ("n3", "node.exit", 10, 1),                                    # an exit without a start: no life
        ("n4", "node.start", 400, 1),                                  # starts at the run end: empty
        ("n1", "send", 120, 4),                                        # other kinds are ignored
    ])
    assert rows(lives(ev, run_end=400.0), "node", "start", "end") == [
        ("n1", 0.0, 100.0), ("n1", 150.0, 400.0), ("n2", 0.0, 50.0), ("n2", 50.0, 80.0)]


# -- merge_intervals -------------------------------------------------------------------------

def test_merge_overlapping_touching_and_contained_intervals(spark):
    df = frame(spark, IV, [
        ("a", 0, 10), ("a", 5, 15), ("a", 15, 20),     # overlap, then touching at 15: one interval
        ("a", 25, 30), ("a", 26, 28),                   # contained: absorbed
        ("b", 0, 100), ("b", 10, 20), ("b", 30, 40),    # after a contained one ends, still inside [0, 100)
        ("c", 0, 10), ("c", 10.5, 11),                  # a gap keeps them apart
    ])
    assert rows(iv.merge_intervals(df, ["k"]), "k", "start", "end") == [
        ("a", 0.0, 20.0), ("a", 25.0, 30.0), ("b", 0.0, 100.0), ("c", 0.0, 10.0), ("c", 10.5, 11.0)]


# -- elementary_segments ---------------------------------------------------------------------

def test_elementary_segments_between_distinct_points(spark):
    pts = frame(spark, "k string, t double", [("a", 30), ("a", 0), ("a", 10), ("a", 10), ("b", 5)])
    # repeated points cut once; a single point makes no segment
    assert rows(iv.elementary_segments(pts, ["k"]), "k", "start", "end") == [("a", 0.0, 10.0), ("a", 10.0, 30.0)]


# -- contains_ts / covers: [start, end) --------------------------------------------------------

def test_contains_ts_includes_the_start_and_excludes_the_end(spark):
    ivs = frame(spark, IV, [("a", 10, 20)]).alias("i")
    pts = frame(spark, "p double", [(9.999,), (10,), (15,), (19.999,), (20,)]).alias("p")
    hits = pts.join(ivs, iv.contains_ts("i", F.col("p.p")))
    assert rows(hits, "p") == [(10.0,), (15.0,), (19.999,)]


def test_covers_means_contains_with_equal_ends_allowed(spark):
    outer = frame(spark, IV, [("o", 10, 20)]).alias("o")
    inner = frame(spark, IV, [("same", 10, 20), ("in", 12, 18), ("left", 5, 15), ("right", 15, 25)]).alias("x")
    hits = inner.join(outer, iv.covers("o", "x")).select(F.col("x.k").alias("k"))
    assert rows(hits, "k") == [("in",), ("same",)]


# -- compress --------------------------------------------------------------------------------

def test_compress_merges_only_adjacent_equal_values(spark):
    df = frame(spark, "k string, start double, end double, v array<string>", [
        ("t", 0, 10, ["a"]), ("t", 10, 20, ["a"]),     # adjacent, equal: one
        ("t", 20, 30, ["a", "b"]),                      # a different value
        ("t", 30, 40, ["a"]),                           # back to the first value: a new piece
        ("t", 45, 50, ["a"]),                           # equal but after a gap: apart
        ("u", 0, 10, []), ("u", 10, 20, []),            # empty sets (no broker) merge like any value
    ])
    assert rows(iv.compress(df, ["k"], "v"), "k", "start", "end", "v") == [
        ("t", 0.0, 20.0, ["a"]), ("t", 20.0, 30.0, ["a", "b"]), ("t", 30.0, 40.0, ["a"]),
        ("t", 45.0, 50.0, ["a"]), ("u", 0.0, 20.0, [])]


# -- overlap_pieces --------------------------------------------------------------------------

def test_overlap_pieces_are_the_intersections_per_key(spark):
    left = frame(spark, "k string, start double, end double, view string",
                 [("T", 0, 100, "v1"), ("T", 100, 150, "v2"), ("U", 0, 10, "u"), ("V", 0, 10, "x")])
    right = frame(spark, "k string, start double, end double, truth string",
                  [("T", 0, 30, "b1"), ("T", 30, 60, "b2"), ("T", 60, 200, "b3"),
                   ("U", 10, 20, "u2")])        # touches U's [0, 10) at 10: no piece; V has no truth
    out = iv.overlap_pieces(left, right, ["k"])
    assert out.columns == ["run", "k", "view", "truth", "start", "end"]  # run: the key of every table
    assert rows(out, "k", "start", "end", "view", "truth") == [
        ("T", 0.0, 30.0, "v1", "b1"), ("T", 30.0, 60.0, "v1", "b2"), ("T", 60.0, 100.0, "v1", "b3"),
        ("T", 100.0, 150.0, "v2", "b3")]


# -- runs_of ---------------------------------------------------------------------------------

def test_runs_of_contiguous_flagged_intervals(spark):
    df = frame(spark, "k string, start double, end double, f boolean", [
        ("c", 0, 10, False), ("c", 10, 20, True), ("c", 20, 30, True),   # one run [10, 30)
        ("c", 30, 40, False), ("c", 40, 50, True),                        # broken by an unflagged piece
        ("c", 55, 60, True),                                              # broken by a gap
        ("d", 0, 10, True),
    ])
    assert rows(iv.runs_of(df, ["k"], "f"), "k", "start", "end") == [
        ("c", 10.0, 30.0), ("c", 40.0, 50.0), ("c", 55.0, 60.0), ("d", 0.0, 10.0)]


# -- truth: hosting clipped to lives, pauses cut out, gaps, open end -------------------------

def test_truth_clips_hosting_to_lives_and_shows_gaps_as_empty_sets(spark):
    hosts = frame(spark, "node string, topic string, broker string, broker_id int, start double, end double", [
        ("broker-a-0", "T", "broker-a", 0, 0, 100),    # hosts until the run end ...
        ("broker-b-0", "T", "broker-b", 0, 20, 100),
        ("broker-a-1", "T", "broker-a", 1, 0, 100),    # a slave never counts
    ])
    life = frame(spark, "node string, start double, end double", [
        ("broker-a-0", 0, 40), ("broker-a-0", 60, 100),  # ... but was killed at 40, back at 60
        ("broker-b-0", 0, 100), ("broker-a-1", 0, 100)])
    paused = frame(spark, "node string, start double, end double", [("broker-b-0", 50, 70)])
    topics = frame(spark, "topic string", [("T",), ("U",)])    # U: nobody hosts it
    out = truth(hosts, paused, topics, run_start=0.0, run_end=100.0, life_iv=life)
    assert rows(out, "topic", "start", "end", "brokers") == [
        ("T", 0.0, 20.0, ["broker-a"]), ("T", 20.0, 40.0, ["broker-a", "broker-b"]),
        ("T", 40.0, 50.0, ["broker-b"]), ("T", 50.0, 60.0, []), ("T", 60.0, 70.0, ["broker-a"]),
        ("T", 70.0, 100.0, ["broker-a", "broker-b"]), ("U", 0.0, 100.0, [])]


# -- client views: until the next route, the node's exit, or the run end --------------------

def test_client_views_end_at_exit_next_route_or_run_end_and_are_cut_at_until(spark):
    ev = frame(spark, EVENTS + ", topic string, publish_queues array<array<string>>", [
        ("pg-1-0", "client.route", 10, 1, "T", [["broker-b", "0"], ["broker-a", "0"], ["broker-a", "1"]]),
        ("pg-1-0", "client.route", 30, 2, "T", [["broker-b", "0"]]),
        ("pg-1-0", "node.exit", 50, 3, None, None),          # ends the view of every topic
        ("pg-1-0", "client.route", 60, 4, "T", None),        # after a restart, an empty route
        ("pg-2-0", "client.route", 20, 1, "T", [["broker-a", "0"]]),   # open: until the run end
    ])
    assert rows(client_views(ev, run_end=100.0), "client", "start", "end", "view") == [
        ("pg-1-0", 10.0, 30.0, ["broker-a", "broker-b"]), ("pg-1-0", 30.0, 50.0, ["broker-b"]),
        ("pg-1-0", 60.0, 100.0, []), ("pg-2-0", 20.0, 100.0, ["broker-a"])]
    # until (run.stop): views are cut there; one starting at or after it is gone
    assert rows(client_views(ev, run_end=100.0, until=60.0), "client", "start", "end") == [
        ("pg-1-0", 10.0, 30.0), ("pg-1-0", 30.0, 50.0), ("pg-2-0", 20.0, 60.0)]
