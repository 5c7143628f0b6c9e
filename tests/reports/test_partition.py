"""Partitions: a symmetric and a one-way cut between producer and broker both make sends
``partitioned``; truth ignores partitions; a pause beats a partition (precedence)."""
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
        croute(1100, "pg-2-0", T, ["broker-a", "broker-b"]),
        send(2100, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="s1"),   # symmetric cut
        send(2100, "pg-2-0", T, "broker-a", msg_id="s2"),                      # not cut
        send(2500, "pg-1-0", T, "broker-a", msg_id="s3"),                      # healed at 2500
        send(3100, "pg-1-0", T, "broker-b", outcome="timeout", msg_id="s4"),   # one-way b -> pg-1
        send(3150, "pg-2-0", T, "broker-b", msg_id="s5"),
        send(3300, "pg-1-0", T, "broker-b", outcome="timeout", msg_id="s6"),   # paused beats cut
        *[exit_(4000, n, code=0) for n in ("broker-a-0", "broker-b-0", "pg-1-0", "pg-2-0")],
    ]
    faults = [
        fault(2000, "fault.start", "f1", "partition", ["pg-1-0", "broker-a-0"],
              links=[["pg-1-0", "broker-a-0"], ["broker-a-0", "pg-1-0"]]),
        fault(2500, "fault.end", "f1", "partition", ["pg-1-0", "broker-a-0"]),
        fault(3000, "fault.start", "f2", "partition", ["broker-b-0", "pg-1-0"],
              links=[["broker-b-0", "pg-1-0"]]),
        fault(3250, "fault.start", "f3", "pause", ["broker-b-0"]),
        fault(3350, "fault.end", "f3", "pause", ["broker-b-0"]),
        fault(3500, "fault.end", "f2", "partition", ["broker-b-0", "pg-1-0"]),
    ]
    return metrics_of(write_run(tmp_path_factory.mktemp("part"), events, faults))


def test_partitioned_sends_either_direction(metrics):
    assert metrics["misrouted"]["by_reason"] == {
        "dead": 0, "paused": 1, "partitioned": 2, "stale_master": 0, "not_master": 0, "no_topic": 0, "bad_queue": 0}
    assert metrics["misrouted"]["total"] == 3


def test_truth_ignores_partitions(metrics):
    # Only the pause of broker-b-0 (100 ms) makes the unchanged views stale.
    for client in ("pg-1-0", "pg-2-0"):
        row = by(metrics["staleness"]["clients"], client=client, topic=T)
        assert (row["stale_ms"], row["stale_over_ms"], row["intervals"]) == (100.0, 100.0, 1)


def test_convergence_of_partitions_is_zero_without_staleness(metrics):
    faults = metrics["staleness"]["faults"]
    assert by(faults, fault_id="f1")["converged_ms"] == 0.0
    # f2's window [3000, 3250) does not reach the pause's stale interval [3250, 3350).
    assert by(faults, fault_id="f2")["converged_ms"] == 0.0
    assert by(faults, fault_id="f3")["converged_ms"] == 100.0
