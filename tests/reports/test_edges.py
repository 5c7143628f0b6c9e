"""Edges of docs/design.md §7 found by an audit, each with its one right answer: a send at the
very end of a run, hosting outside a life, TBW102 without the write bit, a resume fault
that comes before the pause's own fault.end."""
from __future__ import annotations

from tests.reports.runlog import broker_node, by, croute, exit_, fault, metrics_of, send, start, topic, write_run

T, NEW = "T", "NewTopic"
PG = {"role": "producer", "group": "pg-1"}


def run(tmp_path, events, faults=(), nodes=None):
    return metrics_of(write_run(tmp_path, events, list(faults), nodes=nodes))


def test_a_send_at_the_last_moment_of_the_run_is_not_dead(tmp_path):
    """No node.exit and no fault.end: alive and partitioned through the run's last line."""
    events = [start(1000, "broker-a-0", "broker"), start(1000, "pg-1-0", "producer"),
              topic(1000, "broker-a-0", T), croute(1100, "pg-1-0", T, ["broker-a"]),
              send(1500, "pg-1-0", T, "broker-a", msg_id="m1"), send(2000, "pg-1-0", T, "broker-a", msg_id="m2")]
    faults = [fault(1200, "fault.start", "f1", "partition", ["pg-1-0", "broker-a-0"],
                    links=[["pg-1-0", "broker-a-0"]])]
    m = run(tmp_path, events, faults)
    assert m["misrouted"]["by_reason"]["partitioned"] == 2 and m["misrouted"]["total"] == 2


def test_truth_needs_the_master_alive_not_only_a_topic_line(tmp_path):
    """A broker.topic line before node.start (a restore logged early) and a broker that never
    started: neither is in truth, so the client listing broker-a early is over-stale."""
    events = [start(500, "pg-1-0", "producer"),
              croute(500, "pg-1-0", T, ["broker-a"]), topic(500, "broker-a-0", T),
              start(1000, "broker-a-0", "broker"),
              topic(1000, "broker-b-0", T),  # broker-b-0 never logs node.start
              *[exit_(2000, n, code=0) for n in ("broker-a-0", "pg-1-0")]]
    m = run(tmp_path, events, nodes={"broker-a-0": broker_node("broker-a-0"),
                                            "broker-b-0": broker_node("broker-b-0"), "pg-1-0": PG})
    row = by(m["staleness"]["clients"], client="pg-1-0", topic=T)
    assert (row["stale_ms"], row["stale_over_ms"], row["stale_under_ms"]) == (500.0, 500.0, 0.0)


def test_auto_create_needs_tbw102_hosted_that_is_writable_as_well_as_inherit(tmp_path):
    events = [start(1000, "broker-a-0", "broker"), start(1000, "broker-b-0", "broker"),
              start(1000, "pg-1-0", "producer"),
              topic(1000, "broker-a-0", "TBW102", perm=5, queues=8, how="startup"),  # R + inherit, no W
              topic(1000, "broker-b-0", "TBW102", perm=7, queues=8, how="startup"),
              send(1100, "pg-1-0", NEW, "broker-a", outcome="error", msg_id="m1"),
              send(1110, "pg-1-0", NEW, "broker-b", msg_id="m2"),
              *[exit_(2000, n, code=0) for n in ("broker-a-0", "broker-b-0", "pg-1-0")]]
    m = run(tmp_path, events, nodes={"broker-a-0": broker_node("broker-a-0", auto=True),
                                            "broker-b-0": broker_node("broker-b-0", auto=True), "pg-1-0": PG})
    assert m["misrouted"]["by_reason"]["no_topic"] == 1 and m["misrouted"]["total"] == 1


def test_a_pause_lasts_until_its_own_fault_end_even_past_a_resume_fault(tmp_path):
    events = [start(1000, "broker-a-0", "broker"), start(1000, "pg-1-0", "producer"),
              topic(1000, "broker-a-0", T), send(2500, "pg-1-0", T, "broker-a", outcome="timeout", msg_id="m1"),
              *[exit_(4000, n, code=0) for n in ("broker-a-0", "pg-1-0")]]
    faults = [fault(1500, "fault.start", "f1", "pause", ["broker-a-0"]),
              fault(2000, "fault.start", "f2", "resume", ["broker-a-0"]),
              fault(2000, "fault.end", "f2", "resume", ["broker-a-0"]),
              fault(3000, "fault.end", "f1", "pause", ["broker-a-0"])]
    m = run(tmp_path, events, faults)
    assert m["misrouted"]["by_reason"]["paused"] == 1


def test_views_are_measured_up_to_run_stop_not_through_the_shutdown(tmp_path):
    """After the launcher's run.stop the brokers unregister before they exit: a namesrv route
    without them then is the shutdown, not staleness."""
    events = [start(1000, "namesrv-0", "namesrv"), start(1000, "broker-a-0", "broker"),
              topic(1000, "broker-a-0", T),
              {"ts": 1000, "node": "namesrv-0", "kind": "ns.route", "topic": T,
               "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}], "masters": ["broker-a"]},
              {"ts": 2100, "node": "namesrv-0", "kind": "ns.route", "topic": T, "queue_datas": [], "masters": []},
              exit_(2200, "broker-a-0", code=0), exit_(2300, "namesrv-0", code=0)]
    faults = [{"ts": 2000, "node": "launcher", "kind": "run.stop"}]
    m = run(tmp_path, events, faults)
    assert by(m["staleness"]["namesrvs"], namesrv="namesrv-0", topic=T)["stale_ms"] == 0.0
    without = run(tmp_path / "b", events)  # the same log without the marker: 100 ms stale
    assert by(without["staleness"]["namesrvs"], namesrv="namesrv-0", topic=T)["stale_ms"] == 100.0
