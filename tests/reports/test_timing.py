"""Timing health (``reports.timing``, docs/design.md §9) on tiny inline frames: a node's
second-worst window outside its pauses, and the verdict metrics.json carries."""
from __future__ import annotations

from reports.timing import node_lag, verdict
from tests.reports.frames import frame, rows

EVENTS = "node string, kind string, ts double, window_ms double, p99_ms double, max_ms double"
PAUSES = "node string, start double, end double"


def test_second_worst_window_per_node_and_windows_overlapping_its_pause_are_left_out(spark):
    ev = frame(spark, EVENTS, [
        ("n1", "node.lag", 1000, 1000, 1.0, 2.0),
        ("n1", "node.lag", 2000, 1000, 3.0, 9.0),
        ("n2", "node.lag", 1000, 1000, 0.5, 0.5),
        ("n2", "node.lag", 5000, 4000, 3000.0, 3000.0),  # [1000, 5000] holds its pause [1500, 4500)
        ("n2", "node.lag", 6000, 1000, 4.0, 4.0),        # after the pause: counts
        ("n3", "node.lag", 2000, 1000, 900.0, 900.0),    # only window overlaps a pause: nothing left
        ("n4", "node.lag", 1000, 1000, 7.0, 7.0),        # a start-up spike, tolerated
        ("n4", "node.lag", 2000, 1000, 2.0, 2.0),
        ("n4", "node.lag", 3000, 1000, 6.0, 6.0),        # a second window over: that is the lateness
        ("n5", "node.lag", 1000, 1000, 9.0, 9.0),        # one window: no verdict yet
        ("n1", "send", 1500, None, None, None),          # other kinds are ignored
    ])
    pauses = frame(spark, PAUSES, [("n2", 1500, 4500), ("n3", 1999, 3000), ("n1", 2000, 2500)])  # n1's touches only
    got = node_lag(ev, pauses)
    assert rows(got, "node", "windows", "lag_p99_ms", "worst_window_p99_ms", "lag_max_ms", "paused_windows") == [
        ("n1", 2, 1.0, 3.0, 9.0, 0), ("n2", 2, 0.5, 4.0, 4.0, 1), ("n3", 0, None, None, None, 1),
        ("n4", 3, 6.0, 7.0, 7.0, 0), ("n5", 1, None, 9.0, 9.0, 0)]


def test_windows_that_begin_before_the_cluster_was_up_are_left_out(spark):
    """``since`` is the launcher's run.start: spawning the cluster loads the host by itself."""
    ev = frame(spark, EVENTS, [
        ("n1", "node.lag", 1000, 1000, 700.0, 700.0),   # [0, 1000]: while the others were spawned
        ("n1", "node.lag", 2000, 1000, 600.0, 600.0),   # [1000, 2000]: begins before run.start 1500
        ("n1", "node.lag", 3000, 1000, 2.0, 2.0),
        ("n1", "node.lag", 4000, 1000, 3.0, 3.0),
    ])
    got = node_lag(ev, frame(spark, PAUSES, []), since=1500.0)
    assert rows(got, "node", "windows", "lag_p99_ms", "worst_window_p99_ms") == [("n1", 2, 2.0, 3.0)]


def test_verdict_names_the_worst_node_and_the_scale_that_would_keep_up() -> None:
    nodes = [{"node": "a", "lag_p99_ms": 2.0}, {"node": "b", "lag_p99_ms": 12.0}, {"node": "c", "lag_p99_ms": None}]
    v = verdict(nodes, 0.01, [{}, {"pollNameServerInterval": 30000}])
    assert v["healthy"] is False and v["worst_node"] == "b" and v["lag_p99_ms"] == 12.0
    assert v["threshold_ms"] == 5.0 and v["suggested_scale"] == 0.024
    assert verdict(nodes[:1], 0.01, [{}])["healthy"] is True


def test_a_run_without_node_lag_is_unknown() -> None:
    v = verdict([], 0.01, [])
    assert v["healthy"] is None and v["lag_p99_ms"] is None and v["worst_node"] is None
