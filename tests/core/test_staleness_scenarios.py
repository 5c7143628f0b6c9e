"""Route staleness (``reports.core.staleness``) of the Spark tests' scenarios, with exact numbers.

The scenario numbers are those of the Spark tests (tests/reports/test_kill.py, test_restart.py,
test_pause.py, test_partition.py, test_overlap.py, test_edges.py), recomputed here by the core
functions on tiny inline runs, views computed node by node as the engine does.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from rmqemu.reports.core.frame import RunInfo, events, node_table
from rmqemu.reports.core.staleness import (
    client_views,
    fault_convergence,
    namesrv_views,
    stale_intervals,
    stale_pieces,
    staleness_summary,
)
from rmqemu.reports.core.truth import faults, hosts, lives, pauses, truth
from tests.core.test_staleness import T, croute, ev, exit_, fault, row, staleness, start


def topic(ts: float, node: str, name: str, perm: int = 6, how: str = "admin") -> dict[str, Any]:
    broker, bid = node.rsplit("-", 1)
    return ev(ts, node, "broker.topic", broker=broker, broker_id=int(bid), topic=name, read_queues=4,
              write_queues=4, perm=perm, how=how)


def nroute(ts: float, node: str, name: str, brokers: list[str]) -> dict[str, Any]:
    qd = [{"broker": b, "read": 4, "write": 4, "perm": 6} for b in brokers]
    return ev(ts, node, "ns.route", topic=name, queue_datas=qd, masters=brokers)


def per_node(fn: Any, df: pd.DataFrame, by: str, *args: Any) -> pd.DataFrame:
    """``fn`` on each node's rows of ``df`` (as the engine calls it), concatenated."""
    parts = [fn(part, *args) for _, part in df.groupby(by, sort=True)]
    return pd.concat(parts, ignore_index=True) if parts else fn(df, *args)


def analyse(records: list[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """The staleness tables of a hand-made run (brokers named ``<broker>-<id>``)."""
    e = events(records)
    run = RunInfo.of(e)
    manifest = {r["node"]: ({"role": "broker", "broker": r["node"].rsplit("-", 1)[0],
                             "broker_id": int(r["node"].rsplit("-", 1)[1])}
                            if r["role"] == "broker" else {"role": r["role"]})
                for r in records if r["kind"] == "node.start"}
    end = run.run_end
    h, fl = hosts(e, node_table(manifest, e), end), faults(e, end)
    out: dict[str, pd.DataFrame] = {"faults": fl}
    views = {"client": per_node(client_views, e, "node", end, run.measure_end),
             "namesrv": per_node(namesrv_views, e, "node", end, run.measure_end)}
    topics = {*h["topic"], *views["client"]["topic"], *views["namesrv"]["topic"]}
    out["truth"] = tr = truth(h, pauses(fl, end), topics, run.run_start, end, lives(e, end))
    for who, v in views.items():
        pieces = per_node(stale_pieces, v, who, tr, who)
        out[who + "_intervals"] = iv = stale_intervals(pieces, who)
        out[who] = staleness_summary(pieces, iv, who)
    out["convergence"] = fault_convergence(fl, out["client_intervals"])
    return out


def test_kill_fast_and_slow_client_and_namesrv():
    out = analyse([
        start(1000, "namesrv-0", "namesrv"), start(1000, "broker-a-0", "broker"), start(1000, "broker-b-0", "broker"),
        start(1000, "pg-1-0", "producer"), start(1000, "pg-2-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
        nroute(1050, "namesrv-0", T, ["broker-a", "broker-b"]),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]), croute(1100, "pg-2-0", T, ["broker-a", "broker-b"]),
        exit_(2000, "broker-a-0", signal=9),
        nroute(2010, "namesrv-0", T, ["broker-b"]),
        croute(2300, "pg-1-0", T, ["broker-b"]), croute(2900, "pg-2-0", T, ["broker-b"]),
        *[exit_(4000, n, code=0) for n in ("namesrv-0", "broker-b-0", "pg-1-0", "pg-2-0")],
        fault(2000, "fault.start", "f1", "kill", ["broker-a-0"]),
        fault(2000, "fault.end", "f1", "kill", ["broker-a-0"]),
    ])
    fast = row(out["client"], client="pg-1-0", topic=T)
    assert staleness(fast) == (300.0, 300.0, 0.0, 1, 300.0) and fast["measured_ms"] == 2900.0
    assert staleness(row(out["client"], client="pg-2-0", topic=T))[:3] == (900.0, 900.0, 0.0)
    ns = row(out["namesrv"], namesrv="namesrv-0", topic=T)
    assert (ns["stale_ms"], ns["intervals"]) == (10.0, 1)
    f = row(out["convergence"], fault_id="f1")
    assert (f["converged_ms"], f["stale_views"]) == (900.0, 2)
    assert list(out["convergence"].columns) == ["fault_id", "fault", "start", "next_start", "converged_ms",
                                                "stale_views"]


def _two_brokers(route_ms: float) -> list[dict[str, Any]]:
    """A namesrv, masters broker-a and broker-b hosting T and a producer, all up at 1000; the
    namesrv's route to both at ``route_ms``, the producer's at 1100."""
    return [start(1000, "namesrv-0", "namesrv"), start(1000, "broker-a-0", "broker"),
            start(1000, "broker-b-0", "broker"), start(1000, "pg-1-0", "producer"),
            topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
            nroute(route_ms, "namesrv-0", T, ["broker-a", "broker-b"]),
            croute(1100, "pg-1-0", T, ["broker-a", "broker-b"])]


def _exits(ts: float) -> list[dict[str, Any]]:
    """Every node of :func:`_two_brokers` exiting at ``ts``."""
    return [exit_(ts, n, code=0) for n in ("namesrv-0", "broker-a-0", "broker-b-0", "pg-1-0")]


def test_restart_client_over_until_restore_namesrv_under_until_reregistration():
    out = analyse([
        *_two_brokers(1000),
        exit_(2000, "broker-a-0", signal=9), nroute(2000, "namesrv-0", T, ["broker-b"]),
        start(3000, "broker-a-0", "broker"), topic(3100, "broker-a-0", T, how="restore"),
        nroute(3150, "namesrv-0", T, ["broker-a", "broker-b"]),
        *_exits(4000),
        fault(2000, "fault.start", "f1", "kill", ["broker-a-0"]),
        fault(2000, "fault.end", "f1", "kill", ["broker-a-0"]),
        fault(3000, "fault.start", "f2", "restart", ["broker-a-0"]),
        fault(3000, "fault.end", "f2", "restart", ["broker-a-0"]),
    ])
    assert staleness(row(out["client"], client="pg-1-0", topic=T))[:4] == (1100.0, 1100.0, 0.0, 1)
    assert staleness(row(out["namesrv"], namesrv="namesrv-0", topic=T))[:3] == (50.0, 0.0, 50.0)
    assert row(out["convergence"], fault_id="f1")["converged_ms"] == 1100.0
    assert row(out["convergence"], fault_id="f2")["converged_ms"] == 100.0


def test_pause_keeps_the_paused_master_in_stale_views_and_a_resume_ends_it():
    out = analyse([
        *_two_brokers(1100),
        *_exits(4000),
        fault(2000, "fault.start", "f1", "pause", ["broker-a-0"]),
        fault(2600, "fault.end", "f1", "pause", ["broker-a-0"]),
        fault(3000, "fault.start", "f2", "pause", ["broker-a-0"]),    # no fault.end ...
        fault(3200, "fault.start", "f3", "resume", ["broker-a-0"]),   # ... the resume ends it
    ])
    assert staleness(row(out["client"], client="pg-1-0", topic=T)) == (800.0, 800.0, 0.0, 2, 600.0)
    assert staleness(row(out["namesrv"], namesrv="namesrv-0", topic=T))[:4] == (800.0, 800.0, 0.0, 2)
    conv = out["convergence"]
    assert [row(conv, fault_id=f)["converged_ms"] for f in ("f1", "f2", "f3")] == [600.0, 200.0, 0.0]


def test_partition_both_ways_does_not_change_truth():
    out = analyse([
        start(1000, "broker-a-0", "broker"), start(1000, "broker-b-0", "broker"),
        start(1000, "pg-1-0", "producer"), start(1000, "pg-2-0", "producer"),
        topic(1000, "broker-a-0", T), topic(1000, "broker-b-0", T),
        croute(1100, "pg-1-0", T, ["broker-a", "broker-b"]), croute(1100, "pg-2-0", T, ["broker-a", "broker-b"]),
        *[exit_(4000, n, code=0) for n in ("broker-a-0", "broker-b-0", "pg-1-0", "pg-2-0")],
        fault(2000, "fault.start", "f1", "partition", ["pg-1-0", "broker-a-0"],
              links=[["pg-1-0", "broker-a-0"], ["broker-a-0", "pg-1-0"]]),
        fault(2500, "fault.end", "f1", "partition", ["pg-1-0", "broker-a-0"]),
        fault(3000, "fault.start", "f2", "partition", ["broker-b-0", "pg-1-0"], links=[["broker-b-0", "pg-1-0"]]),
        fault(3250, "fault.start", "f3", "pause", ["broker-b-0"]),
        fault(3350, "fault.end", "f3", "pause", ["broker-b-0"]),
        fault(3500, "fault.end", "f2", "partition", ["broker-b-0", "pg-1-0"]),
    ])
    for client in ("pg-1-0", "pg-2-0"):   # only the pause (100 ms) makes the views stale
        assert staleness(row(out["client"], client=client, topic=T))[:4] == (100.0, 100.0, 0.0, 1)
    conv = out["convergence"]
    assert [row(conv, fault_id=f)["converged_ms"] for f in ("f1", "f2", "f3")] == [0.0, 0.0, 100.0]
    assert row(conv, fault_id="f3")["stale_views"] == 2


def test_truth_needs_the_master_alive_not_only_a_topic_line():
    out = analyse([start(500, "pg-1-0", "producer"), croute(500, "pg-1-0", T, ["broker-a"]),
                   topic(500, "broker-a-0", T),
                   start(1000, "broker-a-0", "broker"), topic(1000, "broker-b-0", T),   # b-0 never starts
                   *[exit_(2000, n, code=0) for n in ("broker-a-0", "pg-1-0")]])
    assert staleness(row(out["client"], client="pg-1-0", topic=T))[:3] == (500.0, 500.0, 0.0)


def test_views_are_measured_up_to_run_stop_not_through_the_shutdown():
    log = [start(1000, "namesrv-0", "namesrv"), start(1000, "broker-a-0", "broker"), topic(1000, "broker-a-0", T),
           nroute(1000, "namesrv-0", T, ["broker-a"]), nroute(2100, "namesrv-0", T, []),
           exit_(2200, "broker-a-0", code=0), exit_(2300, "namesrv-0", code=0)]
    stopped = analyse([*log, ev(2000, "launcher", "run.stop")])
    assert row(stopped["namesrv"], namesrv="namesrv-0", topic=T)["stale_ms"] == 0.0
    assert row(analyse(log)["namesrv"], namesrv="namesrv-0", topic=T)["stale_ms"] == 100.0
