"""A master killed; one client notices at once, one polls late (docs/design.md §7)."""
from __future__ import annotations

import pytest

from tests.reports.runlog import by, croute, exit_, fault, metrics_of, nroute, send, start, topic, write_run

T = "OrderTopic"


def kill_scenario() -> tuple[list[dict], list[dict]]:
    """Events and faults of the scenario (also the CLI tests' run, whose values are known)."""
    events = [
        start(1000, "namesrv-0", "namesrv"),
        start(1000, "broker-a-0", "broker", broker="broker-a", broker_id=0),
        start(1000, "broker-b-0", "broker", broker="broker-b", broker_id=0),
        start(1000, "pg-1-0", "producer"), start(1000, "pg-2-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
        nroute(1050, "namesrv-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-2-0", T, ["broker-a", "broker-b"]),
        exit_(2000, "broker-a-0", signal=9),
        nroute(2010, "namesrv-0", T, ["broker-b"]),
        croute(2300, "pg-1-0", T, ["broker-b"]),
        send(2400, "pg-1-0", T, "broker-b", msg_id="m1"),
        send(2500, "pg-2-0", T, "broker-a", outcome="timeout", msg_id="m2", latency_ms=30.0),
        croute(2900, "pg-2-0", T, ["broker-b"]),
        send(3000, "pg-2-0", T, "broker-b", msg_id="m2", latency_ms=2.0),
        *[exit_(4000, n, code=0) for n in ("namesrv-0", "broker-b-0", "pg-1-0", "pg-2-0")],
    ]
    faults = [fault(2000, "fault.start", "f1", "kill", ["broker-a-0"]),
              fault(2000, "fault.end", "f1", "kill", ["broker-a-0"])]
    return events, faults


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    return metrics_of(write_run(tmp_path_factory.mktemp("kill"), *kill_scenario()))


def test_fast_client_stale_from_kill_to_its_next_route(metrics):
    row = by(metrics["staleness"]["clients"], client="pg-1-0", topic=T)
    assert row["stale_ms"] == 300.0 and row["stale_over_ms"] == 300.0 and row["stale_under_ms"] == 0.0
    assert row["intervals"] == 1 and row["max_ms"] == 300.0
    assert row["stale_cluster_s"] == pytest.approx(30.0)
    assert row["measured_ms"] == 2900.0


def test_slow_client_stale_longer(metrics):
    row = by(metrics["staleness"]["clients"], client="pg-2-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["stale_under_ms"]) == (900.0, 900.0, 0.0)
    assert row["max_cluster_s"] == pytest.approx(90.0)


def test_namesrv_view_follows_channel_destroy(metrics):
    row = by(metrics["staleness"]["namesrvs"], namesrv="namesrv-0", topic=T)
    assert (row["stale_ms"], row["intervals"]) == (10.0, 1)


def test_fault_converged_at_slow_client(metrics):
    f = by(metrics["staleness"]["faults"], fault_id="f1")
    assert f["converged_ms"] == 900.0 and f["converged_cluster_s"] == pytest.approx(90.0)
    assert f["start_offset_ms"] == 1000.0 and f["stale_views"] == 2


def test_send_to_killed_master_is_dead(metrics):
    assert metrics["misrouted"]["total"] == 1
    assert metrics["misrouted"]["by_reason"] == {
        "dead": 1, "paused": 0, "partitioned": 0, "stale_master": 0, "not_master": 0, "no_topic": 0, "bad_queue": 0}
    assert metrics["misrouted"]["by_reason_outcome"] == {"dead": {"timeout": 1}}


def test_send_outcomes_and_latency(metrics):
    s = metrics["sends"]
    assert (s["attempts"], s["ok"], s["failed"], s["no_route"]) == (3, 2, 1, 0)
    assert (s["messages"], s["acked"]) == (2, 2)
    assert s["latency"]["all"]["p50_ms"] == 2.0 and s["latency"]["all"]["max_ms"] == 30.0
    assert s["latency"]["ok"]["max_ms"] == 2.0
    assert s["latency"]["all"]["p50_cluster_s"] == pytest.approx(0.2)


def test_run_header(metrics):
    assert metrics["run"] == "r1" and metrics["scale"] == 0.01
    assert metrics["duration_ms"] == 3000.0 and metrics["duration_cluster_s"] == pytest.approx(300.0)
    assert metrics["bad_lines"]["total"] == 0
