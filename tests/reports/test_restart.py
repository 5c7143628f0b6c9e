"""A killed master restarts and hosts again only from its ``how=restore`` line."""
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
        nroute(1000, "namesrv-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]),
        exit_(2000, "broker-a-0", signal=9),
        nroute(2000, "namesrv-0", T, ["broker-b"]),
        send(2500, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="m1"),       # dead
        start(3000, "broker-a-0", "broker"),
        send(3050, "pg-1-0", T, "broker-a", outcome="error", msg_id="m2"),         # alive, no topic yet
        topic(3100, "broker-a-0", T, how="restore"),
        nroute(3150, "namesrv-0", T, ["broker-a", "broker-b"]),
        send(3200, "pg-1-0", T, "broker-a", msg_id="m3"),                          # fine
        *[exit_(4000, n, code=0) for n in ("namesrv-0", "broker-a-0", "broker-b-0", "pg-1-0")],
    ]
    faults = [fault(2000, "fault.start", "f1", "kill", ["broker-a-0"]),
              fault(2000, "fault.end", "f1", "kill", ["broker-a-0"]),
              fault(3000, "fault.start", "f2", "restart", ["broker-a-0"]),
              fault(3000, "fault.end", "f2", "restart", ["broker-a-0"])]
    return metrics_of(write_run(tmp_path_factory.mktemp("restart"), events, faults))


def test_client_over_until_restore(metrics):
    row = by(metrics["staleness"]["clients"], client="pg-1-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["intervals"]) == (1100.0, 1100.0, 1)


def test_namesrv_under_between_restore_and_reregistration(metrics):
    row = by(metrics["staleness"]["namesrvs"], namesrv="namesrv-0", topic=T)
    assert (row["stale_ms"], row["stale_under_ms"], row["stale_over_ms"]) == (50.0, 50.0, 0.0)


def test_restart_window_convergence(metrics):
    faults = metrics["staleness"]["faults"]
    assert by(faults, fault_id="f1")["converged_ms"] == 1100.0
    assert by(faults, fault_id="f2")["converged_ms"] == 100.0


def test_dead_then_no_topic_then_fine(metrics):
    assert metrics["misrouted"]["by_reason"]["dead"] == 1
    assert metrics["misrouted"]["by_reason"]["no_topic"] == 1
    assert metrics["misrouted"]["total"] == 2
