"""Availability and per-fault impact (``reports.core.availability``): the inline cases of
``tests/reports/test_availability.py`` with the same expectations, and its hand-made run
recomputed with the core functions (its numbers are worked out in that module's docstring).

The run: broker-a-0 hosts T and U from 1000; f1 pauses broker-a-0 in [3000, 4000); f2 (a link
delay, no partition) lasts [4500, 6000); run.stop at 9000 (the measured end), exits at 9500.
The convergence of each fault (f1 2000 ms, f2 500 ms) comes from route staleness, not from
these functions, and is given here as the Spark run computed it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from rmqemu.reports.core.availability import (
    NO_ANSWER_OUTCOMES,
    availability_by_pair,
    measured_attempts,
    unavailable_windows,
    with_impact,
)
from rmqemu.reports.core.frame import RunInfo, events, node_table
from rmqemu.reports.core.sends import classify_sends, misrouted_by_reason, sends
from tests.reports.test_availability import NODES, PLAN

T, U = "T", "U"


def _log() -> list[dict[str, Any]]:
    sent = sorted(({"ts": ts, "node": node, "kind": "send", "msg_id": f"{node}-{name}-{ts}", "topic": name,
                    "broker": "broker-a", "queue_id": 0, "attempt": 1, "outcome": outcome, "code": 0,
                    "latency_ms": 1.0, "group": "pg-1"}
                   for (node, name), attempts in PLAN.items() for ts, outcome in attempts), key=lambda e: e["ts"])
    return [*[{"ts": 1000, "node": n, "kind": "node.start", "role": "broker" if n.startswith("broker") else "producer"}
              for n in NODES],
            *[{"ts": 1000, "node": "broker-a-0", "kind": "broker.topic", "broker": "broker-a", "broker_id": 0,
               "topic": name, "read_queues": 4, "write_queues": 4, "perm": 6, "how": "admin"} for name in (T, U)],
            *sent,
            {"ts": 3000, "node": "injector", "kind": "fault.start", "fault_id": "f1", "fault": "pause",
             "targets": ["broker-a-0"]},
            {"ts": 4000, "node": "injector", "kind": "fault.end", "fault_id": "f1", "fault": "pause",
             "targets": ["broker-a-0"]},
            {"ts": 4500, "node": "injector", "kind": "fault.start", "fault_id": "f2", "fault": "link",
             "targets": ["pg-2-0"], "params": {"links": [["pg-2-0", "broker-a-0"]]}},
            {"ts": 6000, "node": "injector", "kind": "fault.end", "fault_id": "f2", "fault": "link",
             "targets": ["pg-2-0"], "params": {"links": [["pg-2-0", "broker-a-0"]]}},
            {"ts": 9000, "node": "launcher", "kind": "run.stop"},
            *[{"ts": 9500, "node": n, "kind": "node.exit", "code": 0} for n in NODES]]


def _iv(rows: list[tuple[Any, ...]], cols: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=cols).astype(object)
    return df.astype({"start": float, "end": float, **({"write_queues": "Int64"} if "write_queues" in cols else {})})


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    """The hand-made run's sends, classification (its interval tables written out by hand),
    windows and fault rows."""
    ev = events(_log())
    info = RunInfo.of(ev)
    assert (info.run_start, info.run_end, info.measure_end) == (1000.0, 9500.0, 9000.0)
    nodes = node_table({"broker-a-0": {"role": "broker", "broker": "broker-a", "broker_id": 0},
                        **{n: {"role": "producer"} for n in NODES[1:]}}, ev)
    end = info.run_end
    tables = dict(lives=_iv([(n, 1000, end) for n in NODES], ["node", "start", "end"]),
                  pauses=_iv([("broker-a-0", 3000, 4000)], ["node", "start", "end"]),
                  partitions=_iv([], ["a", "b", "start", "end"]),
                  hosts=_iv([("broker-a-0", t, "broker-a", 0, 1000, end) for t in (T, U)],
                            ["node", "topic", "broker", "broker_id", "start", "end"]),
                  autocreate=_iv([], ["node", "start", "end"]),
                  write_queues=_iv([("broker-a-0", t, 4, 1000, end) for t in (T, U)],
                                   ["node", "topic", "write_queues", "start", "end"]))
    s = sends(ev)
    # as the Spark layer calls it: one producer's sends at a time, with the run's whole tables
    classified = pd.concat([classify_sends(part, nodes, **tables, run_end=end) for _, part in s.groupby("producer")])
    assert classified.sort_values("seq")["reason"].tolist() == classify_sends(s, nodes, **tables, run_end=end)[
        "reason"].tolist()
    windows = unavailable_windows(s, info.measure_end)
    faults = pd.DataFrame({"fault_id": ["f1", "f2"], "fault": ["pause", "link"], "start": [3000.0, 4500.0],
                           "end": [4000.0, 6000.0], "converged_ms": [2000.0, 500.0]})
    impact = with_impact(faults, faults[["fault_id"]], windows, classified, info.measure_end)
    return {"info": info, "sends": s, "classified": classified, "windows": windows,
            "pairs": availability_by_pair(s, windows), "impact": impact.set_index("fault_id")}


def _pair(run: dict[str, Any], producer: str, name: str) -> tuple[int, float, float]:
    p = run["pairs"]
    row = p[(p["producer"] == producer) & (p["topic"] == name)]
    assert len(row) == 1
    return int(row["windows"].iloc[0]), float(row["total_ms"].iloc[0]), float(row["max_ms"].iloc[0])


def test_a_non_ok_attempt_opens_a_window_the_next_ok_closes(run):
    assert _pair(run, "pg-1-0", T) == (2, 1300.0, 1100.0)  # [3100, 4200) + [4600, 4800)
    assert _pair(run, "pg-2-0", T) == (2, 3200.0, 2400.0)  # [2000, 4400) + [4700, 5500)


def test_a_window_without_a_later_ok_ends_at_the_measured_end(run):
    assert _pair(run, "pg-1-0", U) == (2, 4850.0, 3800.0)  # [3200, 4250), [5200, 9000): 9200 is past run.stop


def test_a_producer_whose_attempts_were_all_ok_has_no_window(run):
    assert _pair(run, "pg-1-1", T) == (0, 0.0, 0.0)


def test_two_topics_of_one_producer_are_separate(run):
    assert list(run["pairs"].columns) == ["producer", "topic", "windows", "total_ms", "max_ms"]
    assert list(zip(run["pairs"]["producer"], run["pairs"]["topic"], strict=True)) == [
        ("pg-1-0", T), ("pg-1-0", U), ("pg-1-1", T), ("pg-2-0", T)]


def test_run_totals(run):
    p = run["pairs"]
    assert (p["max_ms"].max(), p["total_ms"].sum(), int((p["windows"] > 0).sum())) == (3800.0, 9350.0, 3)


def test_the_windows_of_the_run(run):
    w = run["windows"]
    assert list(w.columns) == ["producer", "topic", "start", "end"]
    assert list(w.itertuples(index=False, name=None)) == [
        ("pg-1-0", T, 3100.0, 4200.0), ("pg-1-0", T, 4600.0, 4800.0), ("pg-1-0", U, 3200.0, 4250.0),
        ("pg-1-0", U, 5200.0, 9000.0), ("pg-2-0", T, 2000.0, 4400.0), ("pg-2-0", T, 4700.0, 5500.0)]


def test_measured_attempts_per_producer(run):
    """The plot's spans: pg-1-0 1500 .. 7000 (9200 is past run.stop), 11 measured attempts."""
    att = measured_attempts(run["sends"], run["info"].measure_end)
    spans = att.groupby("producer")["ts"].agg(["min", "max", "size"])
    assert {k: tuple(v) for k, v in spans.iterrows()} == {
        "pg-1-0": (1500, 7000, 11), "pg-1-1": (2000, 6500, 3), "pg-2-0": (1800, 5500, 8)}
    assert list(att.columns) == [*run["sends"].columns, "ok"]


def test_convergence_sets_the_attribution_windows(run):
    assert run["impact"]["impact_end"].tolist() == [5000.0, 6000.0]  # offsets 4000 and 5000 from 1000


def test_rto_is_the_longest_window_starting_inside_the_attribution_window(run):
    assert run["impact"]["rto_ms"].tolist() == [1100.0, 3800.0]  # f1 not 2400 (opened at 2000, before f1)


def test_failed_and_misrouted_sends_count_for_every_window_holding_them(run):
    imp = run["impact"]
    assert imp["failed_sends"].tolist() == [7, 4]
    assert imp["misrouted_sends"].tolist() == [5, 0]
    by_reason = misrouted_by_reason(run["classified"])
    assert list(by_reason.itertuples(index=False, name=None)) == [("paused", "ok", 1), ("paused", "timeout", 4)]
    assert list(imp.reset_index().columns) == [
        "fault_id", "fault", "start", "end", "converged_ms", "impact_end", "rto_ms", "failed_sends", "misrouted_sends"]


# --- single transforms on inline frames ---------------------------------------------------------

def attempts_frame(attempts: list[tuple[Any, ...]], reason: bool = False) -> pd.DataFrame:
    cols = ["producer", "topic", "ts", "seq", "outcome", *(["reason"] if reason else [])]
    df = pd.DataFrame(attempts, columns=cols).astype(object)
    return df.astype({"ts": float, "seq": "Int64"})


def _windows(attempts: list[tuple[Any, ...]], end: float | None = 1000.0) -> list[tuple[Any, ...]]:
    return list(unavailable_windows(attempts_frame(attempts), end).itertuples(index=False, name=None))


def test_window_boundaries_and_ties():
    # p/T: error 100 opens (first attempt), error 200 inside, ok 300 closes -> [100, 300).
    # p/V: error at 500 and an ok logged right after it at the same ts (seq 2): length 0, dropped;
    #      timeout 600 opens again, nothing closes it -> [600, measured end 1000).
    attempts = [("p", T, 100, 1, "error"), ("p", T, 200, 2, "error"), ("p", T, 300, 3, "ok"),
                ("p", "V", 500, 1, "error"), ("p", "V", 500, 2, "ok"), ("p", "V", 600, 3, "timeout")]
    assert _windows(attempts) == [("p", T, 100.0, 300.0), ("p", "V", 600.0, 1000.0)]


def test_oneway_and_unmeasured_attempts_are_left_out():
    # oneway (no answer expected) opens nothing; no_route is not ok and opens [200, 1000);
    # the error at 1100 is past the measured end 1000.
    attempts = [("p", T, 100, 1, "oneway"), ("q", T, 200, 1, "no_route"), ("r", T, 1100, 1, "error")]
    assert NO_ANSWER_OUTCOMES == ("oneway",)
    assert _windows(attempts) == [("q", T, 200.0, 1000.0)]


def test_fault_impact_of_overlapping_faults():
    """Two faults: a [0, 100) converged 150 -> [0, 150); b [120, 200) converged 0 -> [120, 200);
    c [500, 500), an instant fault with nothing in it, keeps its row with zeros.
    The window [130, 170) starts in both a and b (rto 40 each); the failed attempt at 140 lies
    in both; the failed one at 10 in a only (a: 2 failed, b: 1); the misrouted ok attempt at
    160 in b only (150 is a's end, excluded: half-open)."""
    faults = pd.DataFrame({"fault_id": ["a", "b", "c"], "start": [0.0, 120.0, 500.0], "end": [100.0, 200.0, 500.0],
                           "converged_ms": [150.0, 0.0, 0.0]})
    windows = pd.DataFrame({"producer": ["p"], "topic": [T], "start": [130.0], "end": [170.0]})
    classified = attempts_frame([("p", T, 10, 1, "error", None), ("p", T, 140, 2, "timeout", None),
                                 ("p", T, 160, 3, "ok", "dead")], reason=True)
    got = with_impact(faults, faults[["fault_id"]], windows, classified, 1000.0)
    assert list(got[["fault_id", "impact_end", "rto_ms", "failed_sends", "misrouted_sends"]].itertuples(
        index=False, name=None)) == [("a", 150.0, 40.0, 2, 0), ("b", 200.0, 40.0, 1, 1), ("c", 500.0, 0.0, 0, 0)]


# --- edge cases -------------------------------------------------------------------------------

def test_a_failure_after_a_failure_at_the_same_ts_is_inside_one_window():
    attempts = [("p", T, 100, 2, "error"), ("p", T, 100, 1, "timeout"), ("p", T, 100, 3, "ok"), ("p", T, 200, 4, "ok")]
    assert _windows(attempts) == []  # [100, 100): length 0, the ok at seq 3 closes it
    attempts = [("p", T, 100, 1, "error"), ("p", T, 200, 2, "ok"), ("p", T, 200, 3, "error"), ("p", T, 250, 4, "ok")]
    assert _windows(attempts) == [("p", T, 100.0, 200.0), ("p", T, 200.0, 250.0)]


def test_a_null_outcome_is_an_unanswered_attempt_and_the_measured_end_is_inclusive():
    # a null outcome is not ok (and not oneway); an error exactly at the measured end opens
    # a window of length 0 (dropped); without a measured end nothing is measured
    assert _windows([("p", T, 100, 1, None), ("p", T, 1000, 2, "ok")]) == [("p", T, 100.0, 1000.0)]
    assert _windows([("p", T, 1000, 1, "error")]) == []
    assert _windows([("p", T, 100, 1, "error")], end=None) == []


def test_empty_inputs():
    empty = attempts_frame([])
    w = unavailable_windows(empty, 1000.0)
    assert w.empty and list(w.columns) == ["producer", "topic", "start", "end"]
    pairs = availability_by_pair(empty, w)
    assert pairs.empty and list(pairs.columns) == ["producer", "topic", "windows", "total_ms", "max_ms"]
    faults = pd.DataFrame({"fault_id": ["a"], "start": [0.0], "end": [np.nan], "converged_ms": [np.nan]})
    got = with_impact(faults, faults[["fault_id"]], w, attempts_frame([], reason=True), 1000.0)
    # no end and no convergence: the window is [start, start + 0), which holds nothing
    assert got[["fault_id", "impact_end", "rto_ms", "failed_sends", "misrouted_sends"]].values.tolist() == [
        ["a", 0.0, 0.0, 0, 0]]
    none = with_impact(faults.iloc[:0], faults[["fault_id"]].iloc[:0], w, attempts_frame([], reason=True), 1000.0)
    assert none.empty and list(none.columns) == [*faults.columns, "impact_end", "rto_ms", "failed_sends",
                                                 "misrouted_sends"]


def test_a_row_without_its_fault_is_kept_only_if_something_lies_in_its_window():
    rows = pd.DataFrame({"fault_id": ["x", "y"], "start": [0.0, 500.0], "end": [100.0, 600.0],
                         "converged_ms": [0.0, 0.0]})
    classified = attempts_frame([("p", T, 50, 1, "error", None)], reason=True)
    w = unavailable_windows(classified, 1000.0)
    got = with_impact(rows, rows[["fault_id"]].iloc[:0], w, classified, 1000.0)
    assert got["fault_id"].tolist() == ["x"] and got["failed_sends"].tolist() == [1]
