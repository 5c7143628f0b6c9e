"""Route staleness (``reports.core.staleness``) on tiny inline runs, with exact numbers: views,
pieces, intervals, summaries and convergence (the Spark tests' scenarios: test_staleness_scenarios.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core.frame import events
from rmqemu.reports.core.staleness import (
    client_views,
    fault_convergence,
    namesrv_views,
    stale_intervals,
    stale_pieces,
    staleness_summary,
)
from rmqemu.reports.core.truth import faults

T = "T"


def ev(ts: float, node: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": kind, **fields}


def start(ts: float, node: str, role: str) -> dict[str, Any]:
    return ev(ts, node, "node.start", role=role)


def exit_(ts: float, node: str, **fields: Any) -> dict[str, Any]:
    return ev(ts, node, "node.exit", **fields)


def croute(ts: float, node: str, name: str, brokers: list[str]) -> dict[str, Any]:
    return ev(ts, node, "client.route", topic=name, publish_queues=[{"broker": b, "queue_id": 0} for b in brokers])


def fault(ts: float, kind: str, fault_id: str, name: str, targets: list[str], **params: Any) -> dict[str, Any]:
    return ev(ts, "injector", kind, fault_id=fault_id, fault=name, targets=targets, params=params)


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


# -- convergence -------------------------------------------------------------------------------

def test_convergence_without_intervals_or_faults():
    fl = faults(events([fault(10, "fault.start", "f1", "kill", ["x"])]), run_end=100.0)
    none = pd.DataFrame(columns=["client", "topic", "start", "end", "duration_ms"])
    out = fault_convergence(fl, none)
    assert out[["fault_id", "converged_ms", "stale_views"]].values.tolist() == [["f1", 0.0, 0]]
    assert fault_convergence(fl.iloc[:0], none).empty
