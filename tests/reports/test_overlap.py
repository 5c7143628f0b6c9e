"""Overlapping faults: a kill, then two overlapping pauses of another master (merged);
a view that is over and under at once counts in both and once in the total."""
from __future__ import annotations

import pytest

from tests.reports.runlog import by, croute, exit_, fault, metrics_of, send, start, topic, write_run

T = "T"


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    events = [
        start(1000, "broker-a-0", "broker"), start(1000, "broker-b-0", "broker"),
        start(1000, "pg-1-0", "producer"), start(1000, "pg-2-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-2-0", T, ["broker-a"]),
        exit_(2000, "broker-a-0", signal=9),
        croute(2200, "pg-1-0", T, ["broker-b"]),
        send(2400, "pg-1-0", T, "broker-b", outcome="timeout", msg_id="m1"),
        send(2650, "pg-1-0", T, "broker-b", outcome="timeout", msg_id="m2"),
        send(2750, "pg-1-0", T, "broker-b", msg_id="m3"),
        *[exit_(4000, n, code=0) for n in ("broker-b-0", "pg-1-0", "pg-2-0")],
    ]
    faults = [
        fault(2000, "fault.start", "f1", "kill", ["broker-a-0"]),
        fault(2100, "fault.start", "f2", "pause", ["broker-b-0"]),
        fault(2300, "fault.start", "f3", "pause", ["broker-b-0"]),
        fault(2300, "fault.start", "f4", "clock", ["pg-2-0"], offset_ms=5000),  # same start as f3
        fault(2500, "fault.end", "f2", "pause", ["broker-b-0"]),
        fault(2700, "fault.end", "f3", "pause", ["broker-b-0"]),
    ]
    return metrics_of(write_run(tmp_path_factory.mktemp("overlap"), events, faults))


def test_merged_pauses_one_stale_interval(metrics):
    row = by(metrics["staleness"]["clients"], client="pg-1-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["stale_under_ms"]) == (700.0, 700.0, 0.0)
    assert (row["intervals"], row["max_ms"]) == (1, 700.0)


def test_over_and_under_at_once(metrics):
    row = by(metrics["staleness"]["clients"], client="pg-2-0", topic=T)
    assert row["stale_ms"] == 2900.0
    assert (row["stale_over_ms"], row["stale_under_ms"]) == (2000.0, 2300.0)
    assert (row["intervals"], row["max_ms"]) == (1, 2900.0)


def test_convergence_with_overlapping_windows(metrics):
    faults = metrics["staleness"]["faults"]
    assert [f["fault_id"] for f in faults] == ["f1", "f2", "f3", "f4"]
    assert by(faults, fault_id="f1")["converged_ms"] == 2000.0
    assert by(faults, fault_id="f2")["converged_ms"] == 1900.0
    # f3 and f4 start together and share the window [2300, run end).
    assert by(faults, fault_id="f3")["converged_ms"] == 1700.0
    assert by(faults, fault_id="f4")["converged_ms"] == 1700.0


def test_sends_inside_merged_pause(metrics):
    assert metrics["misrouted"]["by_reason"]["paused"] == 2
    assert metrics["misrouted"]["total"] == 2
    assert metrics["staleness"]["clients_total"]["stale_ms"] == 3600.0
