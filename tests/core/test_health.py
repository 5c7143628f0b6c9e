"""Timing health and the drain (reports.core.health, docs/design.md §6, §7, §9) on inline frames,
no JVM: pauses, the tolerated window, start-up windows, the verdict; the drain line copied."""
from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rmqemu import timing
from rmqemu.reports.core.frame import events
from rmqemu.reports.core.health import drain_rows, measured_ms, node_lag, summary, verdict
from rmqemu.reports.summary import timing_health

SCALE = 0.01


def lag(node: str, ts: float, window_ms: float | None, p99: float | None, mx: float | None) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "node.lag", "window_ms": window_ms, "p99_ms": p99, "max_ms": mx}


def pauses(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["node", "start", "end"]).astype({"start": "float64", "end": "float64"})


def rows(df: pd.DataFrame, *cols: str) -> list[tuple[Any, ...]]:
    out = [tuple(None if pd.isna(v) else v for v in r) for r in df[list(cols)].itertuples(index=False)]
    return sorted(out, key=lambda t: tuple((v is not None, v) for v in t))


def test_second_worst_window_per_node_and_windows_overlapping_its_pause_are_left_out() -> None:
    ev = events([
        lag("n1", 1000, 1000, 1.0, 2.0),
        lag("n1", 2000, 1000, 3.0, 9.0),
        lag("n2", 1000, 1000, 0.5, 0.5),
        lag("n2", 5000, 4000, 3000.0, 3000.0),  # [1000, 5000] holds its pause [1500, 4500)
        lag("n2", 6000, 1000, 4.0, 4.0),        # after the pause: counts
        lag("n3", 2000, 1000, 900.0, 900.0),    # only window overlaps a pause: nothing left
        lag("n4", 1000, 1000, 7.0, 7.0),        # a start-up spike, tolerated
        lag("n4", 2000, 1000, 2.0, 2.0),
        lag("n4", 3000, 1000, 6.0, 6.0),        # a second window over: that is the lateness
        lag("n5", 1000, 1000, 9.0, 9.0),        # one window: no verdict yet
        {"ts": 1500, "node": "n1", "kind": "send"},  # other kinds are ignored
    ])
    p = pauses([("n2", 1500, 4500), ("n3", 1999, 3000), ("n1", 2000, 2500)])  # n1's touches only
    got = node_lag(ev, p)
    assert list(got.columns) == ["node", "windows", "lag_p99_ms", "worst_window_p99_ms", "lag_max_ms",
                                 "paused_windows"]
    assert rows(got, *got.columns) == [
        ("n1", 2, 1.0, 3.0, 9.0, 0), ("n2", 2, 0.5, 4.0, 4.0, 1), ("n3", 0, None, None, None, 1),
        ("n4", 3, 6.0, 7.0, 7.0, 0), ("n5", 1, None, 9.0, 9.0, 0)]


def test_windows_that_begin_before_the_cluster_was_up_are_left_out() -> None:
    """``since`` is the launcher's run.start: spawning the cluster loads the host by itself."""
    ev = events([
        lag("n1", 1000, 1000, 700.0, 700.0),   # [0, 1000]: while the others were spawned
        lag("n1", 2000, 1000, 600.0, 600.0),   # [1000, 2000]: begins before run.start 1500
        lag("n1", 3000, 1000, 2.0, 2.0),
        lag("n1", 4000, 1000, 3.0, 3.0),
    ])
    got = node_lag(ev, pauses([]), since=1500.0)
    assert rows(got, "node", "windows", "lag_p99_ms", "worst_window_p99_ms") == [("n1", 2, 2.0, 3.0)]


def test_null_fields_identical_lines_and_no_lag_at_all() -> None:
    """A window without ``window_ms`` is the instant ``ts``; one without ``p99_ms`` counts in
    ``windows`` but not in the ranking; two identical lines are one window (as Spark groups
    them); no node.lag line: no row."""
    ev = events([
        lag("n1", 1000, None, None, 5.0), lag("n1", 2000, 1000, 4.0, 4.0), lag("n1", 2000, 1000, 4.0, 4.0),
        lag("n2", 1000, None, 8.0, 8.0),
    ])
    got = node_lag(ev, pauses([("n2", 999, 1000)]))  # [999, 1000) does not reach the instant 1000
    assert rows(got, *got.columns) == [("n1", 2, None, 4.0, 5.0, 0), ("n2", 1, None, 8.0, 8.0, 0)]
    empty = node_lag(ev.iloc[:0], pauses([]))
    assert empty.empty and list(empty.columns) == list(got.columns)


def test_verdict_names_the_worst_node_and_the_scale_that_would_keep_up() -> None:
    nodes = [{"node": "a", "lag_p99_ms": 2.0}, {"node": "b", "lag_p99_ms": 12.0}, {"node": "c", "lag_p99_ms": None}]
    v = verdict(nodes, 0.01, [{}, {"pollNameServerInterval": 30000}])
    assert v["healthy"] is False and v["worst_node"] == "b" and v["lag_p99_ms"] == 12.0
    assert v["threshold_ms"] == 5.0 and v["suggested_scale"] == 0.024
    assert verdict(nodes[:1], 0.01, [{}])["healthy"] is True


def test_a_run_without_node_lag_is_unknown() -> None:
    v = verdict([], 0.01, [])
    assert v["healthy"] is None and v["lag_p99_ms"] is None and v["worst_node"] is None


def test_a_run_shorter_than_two_windows_is_unknown_and_says_so() -> None:
    """A 5 s run at scale 1.0 (the numbers of a real one): every node's only node.lag line is the
    one it writes as it stops, and its window began when the node did, before run.start; the
    report says the run was too short, not that it predates timing health."""
    up, end = 1_653_847.8, 1_658_941.4
    ev = events([{"ts": up, "node": "launcher", "kind": "run.start"},
                 lag("namesrv-0", 1_658_933.9, 7090.6, 1.6, 1.6),
                 lag("pg-1-0", 1_658_849.5, 5102.3, 2.1, 2.1),
                 {"ts": end, "node": "namesrv-0", "kind": "node.exit"}])
    per_node = node_lag(ev, pauses([]), since=up).to_dict("records")
    m = {"scale": 1.0, "timing": verdict(per_node, 1.0, [{}], measured_ms(float(ev["ts"].min()), end, up))}
    assert m["timing"]["healthy"] is None and m["timing"]["window_ms"] == 10_000.0
    assert m["timing"]["measured_ms"] == pytest.approx(5093.6)
    text = timing_health(m)
    assert text.startswith("unknown: the run was too short for a verdict: 5,093.6 ms (5.09 cluster s) from run.start")
    assert "two node.lag windows after run.start, of 10,000 ms (10 cluster s) each" in text
    assert "before timing health" not in text


def test_a_long_run_without_a_verdict_claims_no_cause_it_cannot_know() -> None:
    """Long enough for two windows, yet none counted (paused throughout, or no node.lag at all,
    as a run of rmqemu before timing health: nothing in the run says which)."""
    long = {"scale": 0.01, "timing": verdict([], 0.01, [{}], measured_ms(0.0, 60_000.0, None))}
    assert timing_health(long) == ("unknown: no node has two node.lag windows after run.start outside its "
                                   "pauses (docs/design.md §9)")
    assert timing_health({"scale": 0.01, "timing": {"healthy": None}}) == timing_health(long)  # older metrics.json


def test_the_measured_time_runs_from_run_start_else_the_first_event() -> None:
    assert measured_ms(1000.0, 9000.0, 2500.0) == 6500.0
    assert measured_ms(1000.0, 9000.0, None) == measured_ms(1000.0, 9000.0, float("nan")) == 8000.0


def test_too_short_means_under_the_two_windows_a_verdict_needs() -> None:
    assert timing.too_short_for_verdict(19_999.0, 1.0) and not timing.too_short_for_verdict(20_000.0, 1.0)
    assert timing.too_short_for_verdict(1_999.0, 0.01) and not timing.too_short_for_verdict(2_000.0, 0.01)


DRAIN = {"ts": 2000.0, "node": "launcher", "kind": "run.drain", "completed": False, "waited_ms": 300.0,
         "timeout_ms": 300.0, "lag_total": 3, "unreadable": [],
         "lag_left": [{"group": "cg", "topic": "T", "broker": "broker-a", "queue_id": 1, "lag": 3}]}


def test_drain_is_copied_from_run_drain_and_null_without_it() -> None:
    stop = {"ts": 1950.0, "node": "launcher", "kind": "run.stop"}
    send = {"ts": 1200.0, "node": "pg-1-0", "kind": "send", "topic": "T", "msg_id": "m1", "outcome": "ok"}
    got = drain_rows(events([send, stop, DRAIN]))
    assert got == [{"ts": 2000.0, "completed": False, "waited_ms": 300.0, "timeout_ms": 300.0, "lag_total": 3,
                    "lag_left": [{**DRAIN["lag_left"][0], "consumer": None}], "unreadable": [],
                    "interrupted": None}]
    assert summary(got) == {"completed": False, "waited_ms": 300.0, "timeout_ms": 300.0, "lag_total": 3,
                            "lag_left": DRAIN["lag_left"], "unreadable": [], "interrupted": False}
    none = summary(drain_rows(events([send, stop])))
    assert none["completed"] is None and none["waited_cluster_s"] is None and none["lag_left"] == []


def test_the_last_drain_line_wins() -> None:
    first = {**DRAIN, "ts": 1000.0, "completed": True, "lag_left": None, "unreadable": ["broker-b"]}
    rows_ = drain_rows(events([DRAIN, first]))
    assert [r["ts"] for r in rows_] == [2000.0, 1000.0]
    assert summary(rows_)["completed"] is False
    assert summary([rows_[1]])["lag_left"] == [] and summary([rows_[1]])["unreadable"] == ["broker-b"]
