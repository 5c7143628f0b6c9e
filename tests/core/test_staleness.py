"""Route staleness (``reports.core.staleness``) on tiny inline runs, with exact numbers.

The scenario numbers are those of the Spark tests (tests/reports/test_kill.py, test_restart.py,
test_pause.py, test_partition.py, test_overlap.py, test_edges.py), recomputed here by the core
functions, views computed node by node as the engine does.
"""
from __future__ import annotations

from typing import Any

import numpy as np
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

T = "T"


def ev(ts: float, node: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": kind, **fields}


def start(ts: float, node: str, role: str) -> dict[str, Any]:
    return ev(ts, node, "node.start", role=role)


def exit_(ts: float, node: str, **fields: Any) -> dict[str, Any]:
    return ev(ts, node, "node.exit", **fields)


def topic(ts: float, node: str, name: str, perm: int = 6, how: str = "admin") -> dict[str, Any]:
    broker, bid = node.rsplit("-", 1)
    return ev(ts, node, "broker.topic", broker=broker, broker_id=int(bid), topic=name, read_queues=4,
              write_queues=4, perm=perm, how=how)


def croute(ts: float, node: str, name: str, brokers: list[str]) -> dict[str, Any]:
    return ev(ts, node, "client.route", topic=name, publish_queues=[[b, "0"] for b in brokers])


def nroute(ts: float, node: str, name: str, brokers: list[str]) -> dict[str, Any]:
    qd = [{"broker": b, "read": 4, "write": 4, "perm": 6} for b in brokers]
    return ev(ts, node, "ns.route", topic=name, queue_datas=qd, masters=brokers)


def fault(ts: float, kind: str, fault_id: str, name: str, targets: list[str], **params: Any) -> dict[str, Any]:
    return ev(ts, "injector", kind, fault_id=fault_id, fault=name, targets=targets, params=params)


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


def row(df: pd.DataFrame, **match: Any) -> dict[str, Any]:
    """The single row of ``df`` whose columns equal ``match``, as plain values."""
    hit = df[np.logical_and.reduce([(df[k] == v).to_numpy() for k, v in match.items()])]
    assert len(hit) == 1, (match, df)
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in hit.iloc[0].items()}


def staleness(r: dict[str, Any]) -> tuple[float, float, float, int, float]:
    return r["stale_ms"], r["stale_over_ms"], r["stale_under_ms"], r["intervals"], r["max_ms"]


# -- views -------------------------------------------------------------------------------------

def test_client_views_end_at_exit_next_route_or_run_end_and_are_cut_at_until():
    e = events([
        croute(10, "pg-1-0", T, ["broker-b", "broker-a", "broker-a"]),
        croute(30, "pg-1-0", T, ["broker-b"]),
        exit_(50, "pg-1-0"),                              # ends the view of every topic
        ev(60, "pg-1-0", "client.route", topic=T),        # after a restart, an empty route
        croute(20, "pg-2-0", T, ["broker-a"]),            # open: until the run end
    ])
    out = client_views(e, run_end=100.0)
    assert list(out.columns) == ["client", "topic", "start", "end", "view"]
    assert out.sort_values(["client", "start"])[["client", "start", "end", "view"]].values.tolist() == [
        ["pg-1-0", 10.0, 30.0, ("broker-a", "broker-b")], ["pg-1-0", 30.0, 50.0, ("broker-b",)],
        ["pg-1-0", 60.0, 100.0, ()], ["pg-2-0", 20.0, 100.0, ("broker-a",)]]
    # until (run.stop): views are cut there; one starting at or after it is gone
    cut = client_views(e, run_end=100.0, until=60.0).sort_values(["client", "start"])
    assert cut[["client", "start", "end"]].values.tolist() == [
        ["pg-1-0", 10.0, 30.0], ["pg-1-0", 30.0, 50.0], ["pg-2-0", 20.0, 60.0]]
    # an until at or after the run end cuts nothing; one node's events give that node's rows
    assert len(client_views(e, run_end=100.0, until=100.0)) == 4
    one = client_views(e[e["node"] == "pg-2-0"], run_end=100.0)
    assert one[["client", "start", "end"]].values.tolist() == [["pg-2-0", 20.0, 100.0]]


def test_namesrv_view_keeps_writable_queue_data_of_masters():
    qd = [{"broker": "broker-a", "write": 4, "perm": 6}, {"broker": "broker-b", "write": 0, "perm": 6},
          {"broker": "broker-c", "perm": 2}, {"broker": "broker-d", "write": 4, "perm": 4},
          {"broker": "broker-e", "write": 4, "perm": 6}, {"broker": "broker-a", "write": 4, "perm": 6}]
    e = events([ev(0, "namesrv-0", "ns.route", topic=T, queue_datas=qd, masters=["broker-a", "broker-b", "broker-c",
                                                                                 "broker-d"]),
                ev(5, "namesrv-0", "ns.route", topic=T, queue_datas=None, masters=None),
                ev(7, "namesrv-1", "ns.route", topic=T, queue_datas=qd, masters=None)])
    out = namesrv_views(e, run_end=10.0)
    assert list(out.columns) == ["namesrv", "topic", "start", "end", "view"]
    # b: no write queue; d: not writable; e: not a master; a missing write counts as writable
    assert out[["namesrv", "start", "end", "view"]].values.tolist() == [
        ["namesrv-0", 0.0, 5.0, ("broker-a", "broker-c")], ["namesrv-0", 5.0, 10.0, ()], ["namesrv-1", 7.0, 10.0, ()]]


def test_views_of_no_routes():
    e = events([start(0, "pg-1-0", "producer")])
    for out, who in ((client_views(e, 10.0, 5.0), "client"), (namesrv_views(e, 10.0), "namesrv")):
        assert out.empty and list(out.columns) == [who, "topic", "start", "end", "view"]
        pieces = stale_pieces(out, pd.DataFrame(columns=["topic", "start", "end", "brokers"]), who)
        assert pieces.empty and list(pieces.columns) == [who, "topic", "start", "end", "view", "brokers", "over",
                                                          "under", "stale"]
        iv = stale_intervals(pieces, who)
        assert iv.empty and list(iv.columns) == [who, "topic", "start", "end", "duration_ms"]
        summary = staleness_summary(pieces, iv, who)
        assert summary.empty and list(summary.columns) == [who, "topic", "measured_ms", "stale_ms", "stale_over_ms",
                                                           "stale_under_ms", "intervals", "max_ms"]


# -- pieces, intervals, summary ----------------------------------------------------------------

def _views(*rows: tuple[str, float, float, tuple[str, ...]]) -> pd.DataFrame:
    return pd.DataFrame([(c, T, s, e, v) for c, s, e, v in rows], columns=["client", "topic", "start", "end", "view"])


def test_over_and_under_count_once_and_contiguous_over_then_under_is_one_interval():
    tr = pd.DataFrame([(T, 0.0, 10.0, ("a", "b")), (T, 10.0, 20.0, ("b",)), (T, 20.0, 30.0, ("b", "c")),
                       (T, 30.0, 50.0, ("c",))], columns=["topic", "start", "end", "brokers"])
    views = _views(("pg-1-0", 0.0, 10.0, ("a", "b")),    # fresh
                   ("pg-1-0", 10.0, 25.0, ("a", "b")),   # over [10, 20), then over and under [20, 25)
                   ("pg-1-0", 25.0, 40.0, ("b", "c")),   # fresh [25, 30), then over [30, 40)
                   ("pg-1-0", 45.0, 50.0, ()))           # under, after a gap in the view: apart
    pieces = stale_pieces(views, tr, "client")
    assert pieces[["start", "end", "over", "under", "stale"]].values.tolist() == [
        [0.0, 10.0, False, False, False], [10.0, 20.0, True, False, True], [20.0, 25.0, True, True, True],
        [25.0, 30.0, False, False, False], [30.0, 40.0, True, False, True], [45.0, 50.0, False, True, True]]
    iv = stale_intervals(pieces, "client")
    assert iv[["start", "end", "duration_ms"]].values.tolist() == [[10.0, 25.0, 15.0], [30.0, 40.0, 10.0],
                                                                  [45.0, 50.0, 5.0]]
    s = row(staleness_summary(pieces, iv, "client"), client="pg-1-0")
    assert s["measured_ms"] == 45.0 and staleness(s) == (30.0, 25.0, 10.0, 3, 15.0)
    # over -> under with no fresh moment between: one interval
    views = _views(("pg-2-0", 0.0, 15.0, ("a", "b", "c")))
    iv = stale_intervals(stale_pieces(views, tr, "client"), "client")
    assert iv[["start", "end"]].values.tolist() == [[0.0, 15.0]]


def test_a_view_never_stale_has_zeros():
    tr = pd.DataFrame([(T, 0.0, 50.0, ("a",))], columns=["topic", "start", "end", "brokers"])
    pieces = stale_pieces(_views(("pg-1-0", 10.0, 20.0, ("a",))), tr, "client")
    s = row(staleness_summary(pieces, stale_intervals(pieces, "client"), "client"), client="pg-1-0")
    assert s["measured_ms"] == 10.0 and staleness(s) == (0.0, 0.0, 0.0, 0, 0.0)


# -- scenarios of the Spark tests --------------------------------------------------------------

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


def test_convergence_without_intervals_or_faults():
    fl = faults(events([fault(10, "fault.start", "f1", "kill", ["x"])]), run_end=100.0)
    none = pd.DataFrame(columns=["client", "topic", "start", "end", "duration_ms"])
    out = fault_convergence(fl, none)
    assert out[["fault_id", "converged_ms", "stale_views"]].values.tolist() == [["f1", 0.0, 0]]
    assert fault_convergence(fl.iloc[:0], none).empty
