"""Pauses: a paused master is not in truth (over-staleness for clients that keep it),
sends to it are ``paused``; a pause without ``fault.end`` ends at a ``resume``."""
from __future__ import annotations

import pytest

from tests.reports.runlog import by, croute, exit_, fault, metrics_of, nroute, send, start, topic, write_run

T = "T"


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    events = [
        start(1000, "namesrv-0", "namesrv"),
        start(1000, "broker-a-0", "broker"), start(1000, "broker-b-0", "broker"),
        start(1000, "pg-1-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
        nroute(1100, "namesrv-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]),
        send(2200, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="m1"),
        send(2700, "pg-1-0", T, "broker-a", msg_id="m2"),
        send(3100, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="m3"),
        send(3200, "pg-1-0", T, "broker-a", msg_id="m4"),
        *[exit_(4000, n, code=0) for n in ("namesrv-0", "broker-a-0", "broker-b-0", "pg-1-0")],
    ]
    faults = [
        fault(2000, "fault.start", "f1", "pause", ["broker-a-0"]),
        fault(2600, "fault.end", "f1", "pause", ["broker-a-0"]),
        fault(3000, "fault.start", "f2", "pause", ["broker-a-0"]),  # no fault.end ...
        fault(3200, "fault.start", "f3", "resume", ["broker-a-0"]),  # ... the resume ends it
    ]
    return metrics_of(write_run(tmp_path_factory.mktemp("pause"), events, faults))


def test_client_keeping_paused_master_is_stale_over(metrics):
    row = by(metrics["staleness"]["clients"], client="pg-1-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["stale_under_ms"]) == (800.0, 800.0, 0.0)
    assert (row["intervals"], row["max_ms"]) == (2, 600.0)


def test_namesrv_keeps_paused_broker(metrics):
    # A SIGSTOP closes no channel: the namesrv keeps the route, stale like the client.
    row = by(metrics["staleness"]["namesrvs"], namesrv="namesrv-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["intervals"]) == (800.0, 800.0, 2)


def test_convergence_per_fault_window(metrics):
    faults = metrics["staleness"]["faults"]
    assert by(faults, fault_id="f1")["converged_ms"] == 600.0
    assert by(faults, fault_id="f2")["converged_ms"] == 200.0
    # The interval ending exactly at f3's start does not overlap f3's window.
    assert by(faults, fault_id="f3")["converged_ms"] == 0.0


def test_sends_during_pause(metrics):
    assert metrics["misrouted"]["by_reason"]["paused"] == 2
    assert metrics["misrouted"]["total"] == 2
