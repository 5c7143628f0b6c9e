"""Ground truth (``reports.core.truth``) on tiny inline event lists, with exact rows: lives,
hosting per life, auto-create, write queues, the fault table, pauses, partitions and truth."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core.frame import events
from rmqemu.reports.core.truth import (
    FAULT_COLUMNS,
    autocreate,
    broker_nodes,
    exits,
    faults,
    hosts,
    lives,
    partitions,
    pauses,
    truth,
    write_queues,
)


def rows(df: pd.DataFrame, *cols: str) -> list[tuple[Any, ...]]:
    """The rows of ``df`` restricted to ``cols``, as sorted plain tuples (nulls as None)."""
    def plain(v: Any) -> Any:
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            return None
        return v.item() if isinstance(v, np.generic) else v
    out = [tuple(plain(v) for v in r) for r in df[list(cols)].itertuples(index=False)]
    return sorted(out, key=lambda r: tuple((0, 0) if v is None else (1, v) for v in r))  # None first


def ev(ts: float, node: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": kind, **fields}


def topic(ts: float, node: str, name: str, perm: int = 6, queues: int = 4, how: str = "admin",
          named: bool = True) -> dict[str, Any]:
    broker, bid = node.rsplit("-", 1)
    extra = {"broker": broker, "broker_id": int(bid)} if named else {}
    return ev(ts, node, "broker.topic", topic=name, read_queues=queues, write_queues=queues, perm=perm, how=how,
              **extra)


def fault(ts: float, kind: str, fault_id: str, name: str, targets: list[str], **params: Any) -> dict[str, Any]:
    return ev(ts, "injector", kind, fault_id=fault_id, fault=name, targets=targets, params=params)


NODES = pd.DataFrame({"node": ["broker-a-0", "broker-a-1", "broker-b-0", "pg-1-0"],
                      "role": ["broker", "broker", "broker", "producer"],
                      "broker": ["broker-a", "broker-a", None, None],
                      "broker_id": pd.array([0, 1, None, None], dtype="Int64"),
                      "group": [None, None, None, "pg-1"],
                      "auto_create": pd.array([True, None, None, None], dtype="boolean")})


def test_lives_from_starts_and_exits():
    e = events([
        ev(0, "n1", "node.start"), ev(100, "n1", "node.exit"), ev(150, "n1", "node.start"),  # restarted
        ev(0, "n2", "node.start"), ev(50, "n2", "node.start"),     # a second start ends the first life
        ev(80, "n2", "node.exit"), ev(80, "n2", "node.exit"),      # launcher and injector both log the exit
        ev(10, "n3", "node.exit"),                                 # an exit without a start: no life
        ev(400, "n4", "node.start"),                               # starts at the run end: empty
        ev(120, "n1", "send"),                                     # other kinds are ignored
    ])
    out = lives(e, run_end=400.0)
    assert list(out.columns) == ["node", "start", "end"]
    assert rows(out, "node", "start", "end") == [
        ("n1", 0.0, 100.0), ("n1", 150.0, 400.0), ("n2", 0.0, 50.0), ("n2", 50.0, 80.0)]
    assert rows(exits(e), "node", "ts") == [("n1", 100.0), ("n2", 80.0), ("n2", 80.0), ("n3", 10.0)]


def test_broker_nodes_default_the_id_to_zero():
    out = broker_nodes(NODES)   # broker-b-0 has no broker name: not a broker node here
    assert rows(out, "node", "broker", "broker_id") == [("broker-a-0", "broker-a", 0), ("broker-a-1", "broker-a", 1)]


def test_hosting_per_life_restore_after_restart_and_read_only_lines():
    e = events([
        ev(0, "broker-a-0", "node.start"), topic(10, "broker-a-0", "T"),
        topic(20, "broker-a-0", "T", perm=4),          # read-only later: does not end hosting
        topic(15, "broker-a-0", "R", perm=4),          # never writable: never hosted
        ev(100, "broker-a-0", "node.exit", signal=9),
        topic(120, "broker-a-0", "T", how="restore"),  # logged before the restart: belongs to the next life
        ev(150, "broker-a-0", "node.start"),
        topic(30, "broker-b-0", "T", named=False),     # name and id from the node table (b-0: none: id 0)
        topic(40, "broker-a-1", "T", named=False),
    ])
    out = hosts(e, NODES, run_end=300.0)
    assert list(out.columns) == ["node", "topic", "start", "end", "broker", "broker_id"]
    assert rows(out, "node", "topic", "broker", "broker_id", "start", "end") == [
        ("broker-a-0", "T", "broker-a", 0, 10.0, 100.0), ("broker-a-0", "T", "broker-a", 0, 120.0, 300.0),
        ("broker-a-1", "T", "broker-a", 1, 40.0, 300.0), ("broker-b-0", "T", None, 0, 30.0, 300.0)]


def test_autocreate_needs_write_and_inherit_bits():
    e = events([topic(0, "broker-a-0", "TBW102", perm=7), topic(0, "broker-a-1", "TBW102", perm=5),
                topic(0, "broker-b-0", "TBW102", perm=6), topic(0, "broker-b-0", "T", perm=7),
                ev(50, "broker-a-0", "node.exit")])
    out = autocreate(e, NODES, run_end=100.0)
    assert list(out.columns) == ["node", "start", "end"]
    assert rows(out, "node", "start", "end") == [("broker-a-0", 0.0, 50.0)]


def test_write_queues_latest_line_until_the_next_or_the_exit():
    e = events([topic(0, "broker-a-0", "T", queues=4), topic(10, "broker-a-0", "T", queues=8, perm=4),
                topic(5, "broker-a-0", "U", queues=2), ev(50, "broker-a-0", "node.exit"),
                topic(60, "broker-a-0", "T", queues=1)])
    out = write_queues(e, run_end=100.0)
    assert list(out.columns) == ["node", "topic", "write_queues", "start", "end"]
    assert rows(out, "topic", "write_queues", "start", "end") == [
        ("T", 1, 60.0, 100.0), ("T", 4, 0.0, 10.0), ("T", 8, 10.0, 50.0), ("U", 2, 5.0, 50.0)]


def _fault_log() -> pd.DataFrame:
    return events([
        fault(100, "fault.start", "f1", "pause", ["broker-a-0"]),
        fault(200, "fault.start", "f2", "pause", ["broker-a-0"]),      # overlaps f1: merged
        fault(300, "fault.end", "f1", "pause", ["broker-a-0"]),
        fault(350, "fault.end", "f2", "pause", ["broker-a-0"]),
        fault(400, "fault.start", "f3", "pause", ["broker-b-0", "broker-a-0"]),   # no fault.end ...
        fault(400, "fault.start", "f4", "partition", ["pg-1-0", "broker-a-0"],   # starts with f3
              links=[["pg-1-0", "broker-a-0"], ["broker-a-0", "pg-1-0"], ["x"]]),
        fault(450, "fault.start", "f5", "resume", ["broker-b-0"]),     # ... ends f3 for broker-b-0 only
        fault(500, "fault.end", "f4", "partition", ["pg-1-0", "broker-a-0"]),
        fault(520, "fault.start", "f6", "partition", ["broker-a-0", "pg-1-0"], links=[["broker-a-0", "pg-1-0"]]),
        fault(600, "fault.start", "f7", "pause", ["broker-c-0"]),
        fault(610, "fault.start", "f8", "resume", ["broker-c-0"]),
        fault(620, "fault.end", "f8", "resume", ["broker-c-0"]),
        fault(700, "fault.end", "f7", "pause", ["broker-c-0"]),        # its own end beats the resume
    ])


def test_fault_table_one_row_per_fault_with_shared_windows():
    out = faults(_fault_log(), run_end=1000.0)
    assert list(out.columns) == FAULT_COLUMNS
    assert rows(out, "fault_id", "fault", "targets", "start", "end", "has_end", "next_start") == [
        ("f1", "pause", ("broker-a-0",), 100.0, 300.0, True, 200.0),
        ("f2", "pause", ("broker-a-0",), 200.0, 350.0, True, 400.0),
        ("f3", "pause", ("broker-b-0", "broker-a-0"), 400.0, 1000.0, False, 450.0),
        ("f4", "partition", ("pg-1-0", "broker-a-0"), 400.0, 500.0, True, 450.0),   # f3 and f4 share [400, 450)
        ("f5", "resume", ("broker-b-0",), 450.0, 1000.0, False, 520.0),
        ("f6", "partition", ("broker-a-0", "pg-1-0"), 520.0, 1000.0, False, 600.0),
        ("f7", "pause", ("broker-c-0",), 600.0, 700.0, True, 610.0),
        ("f8", "resume", ("broker-c-0",), 610.0, 620.0, True, 1000.0)]
    assert out.loc[out["fault_id"] == "f4", "params"].iloc[0]["links"][0] == ["pg-1-0", "broker-a-0"]


def test_pauses_end_at_own_end_else_a_later_resume_else_the_run_end_and_merge():
    out = pauses(faults(_fault_log(), run_end=1000.0), run_end=1000.0)
    assert list(out.columns) == ["node", "start", "end"]
    assert rows(out, "node", "start", "end") == [
        ("broker-a-0", 100.0, 350.0), ("broker-a-0", 400.0, 1000.0),
        ("broker-b-0", 400.0, 450.0), ("broker-c-0", 600.0, 700.0)]


def test_partitions_both_directions_as_one_unordered_link():
    out = partitions(faults(_fault_log(), run_end=1000.0))
    assert list(out.columns) == ["a", "b", "start", "end"]
    # f4 [400, 500) and f6 [520, 1000) on the same link; the one-node link is ignored
    assert rows(out, "a", "b", "start", "end") == [("broker-a-0", "pg-1-0", 400.0, 500.0),
                                                   ("broker-a-0", "pg-1-0", 520.0, 1000.0)]


def test_params_as_plain_dicts_are_read_too():
    fl = faults(_fault_log(), run_end=1000.0)
    fl["params"] = pd.Series([None if p is pd.NA else dict(p) for p in fl["params"]], dtype=object)
    assert len(partitions(fl)) == 2


def test_truth_clips_hosting_to_lives_and_shows_gaps_as_empty_sets():
    host_iv = pd.DataFrame({
        "node": ["broker-a-0", "broker-b-0", "broker-a-1"], "topic": ["T", "T", "T"],
        "broker": ["broker-a", "broker-b", "broker-a"], "broker_id": pd.array([0, 0, 1], dtype="Int64"),
        "start": [0.0, 20.0, 0.0], "end": [100.0, 100.0, 100.0]})   # a slave never counts
    life = pd.DataFrame({"node": ["broker-a-0", "broker-a-0", "broker-b-0", "broker-a-1"],
                         "start": [0.0, 60.0, 0.0, 0.0], "end": [40.0, 100.0, 100.0, 100.0]})  # a killed at 40
    paused = pd.DataFrame({"node": ["broker-b-0"], "start": [50.0], "end": [70.0]})
    out = truth(host_iv, paused, ["T", "U"], run_start=0.0, run_end=100.0, life_iv=life)  # U: nobody hosts it
    assert list(out.columns) == ["topic", "start", "end", "brokers"]
    assert rows(out, "topic", "start", "end", "brokers") == [
        ("T", 0.0, 20.0, ("broker-a",)), ("T", 20.0, 40.0, ("broker-a", "broker-b")),
        ("T", 40.0, 50.0, ("broker-b",)), ("T", 50.0, 60.0, ()), ("T", 60.0, 70.0, ("broker-a",)),
        ("T", 70.0, 100.0, ("broker-a", "broker-b")), ("U", 0.0, 100.0, ())]
    # without lives: hosting as logged, so broker-a stays from 0 to 100
    assert rows(truth(host_iv, paused, ["T"], 0.0, 100.0), "start", "end", "brokers") == [
        (0.0, 20.0, ("broker-a",)), (20.0, 50.0, ("broker-a", "broker-b")), (50.0, 70.0, ("broker-a",)),
        (70.0, 100.0, ("broker-a", "broker-b"))]


def test_truth_from_events_needs_the_master_alive_not_only_a_topic_line():
    """A broker.topic line before node.start, and a broker that never started: not in truth."""
    e = events([topic(500, "broker-a-0", "T"), ev(1000, "broker-a-0", "node.start"), topic(1000, "broker-b-0", "T"),
                ev(2000, "broker-a-0", "node.exit")])
    end = 2000.0
    out = truth(hosts(e, NODES, end), pauses(faults(e, end), end), ["T"], 500.0, end, lives(e, end))
    assert rows(out, "topic", "start", "end", "brokers") == [
        ("T", 500.0, 1000.0, ()), ("T", 1000.0, 2000.0, ("broker-a",))]


def test_everything_of_an_empty_run():
    e = events([ev(0, "pg-1-0", "send")])
    assert lives(e, 10.0).empty and hosts(e, NODES, 10.0).empty and autocreate(e, NODES, 10.0).empty
    assert write_queues(e, 10.0).empty
    fl = faults(e, 10.0)
    assert fl.empty and list(fl.columns) == FAULT_COLUMNS
    assert pauses(fl, 10.0).empty and list(pauses(fl, 10.0).columns) == ["node", "start", "end"]
    assert partitions(fl).empty and list(partitions(fl).columns) == ["a", "b", "start", "end"]
    t = truth(hosts(e, NODES, 10.0), pauses(fl, 10.0), [], 0.0, 10.0, lives(e, 10.0))
    assert t.empty and list(t.columns) == ["topic", "start", "end", "brokers"]
    assert rows(truth(hosts(e, NODES, 10.0), pauses(fl, 10.0), ["T"], 0.0, 10.0),
                "topic", "start", "end", "brokers") == [("T", 0.0, 10.0, ())]


def test_a_dledger_peer_is_master_between_its_broker_role_lines_only():
    """A peer's hosting takes the brokerId of its latest ``broker.role``: master (0) from its
    promotion until its demotion or exit, so truth follows the moving master."""
    nodes = pd.DataFrame({"node": ["broker-a-n0", "broker-a-n1"], "role": ["broker", "broker"],
                          "broker": ["broker-a", "broker-a"], "broker_id": pd.array([None, None], dtype="Int64"),
                          "group": [None, None], "auto_create": pd.array([None, None], dtype="boolean")})

    def role(ts: float, node: str, bid: int) -> dict[str, Any]:
        return ev(ts, node, "broker.role", broker="broker-a", broker_id=bid,
                  role="SYNC_MASTER" if bid == 0 else "SLAVE", term=1)

    def topic_on(ts: float, node: str) -> dict[str, Any]:
        return ev(ts, node, "broker.topic", topic="T", read_queues=4, write_queues=4, perm=6, how="startup",
                  broker="broker-a", broker_id=-1)

    evs = events([topic_on(1, "broker-a-n0"), topic_on(1, "broker-a-n1"), role(5, "broker-a-n0", 0),
                  role(6, "broker-a-n1", 2), ev(50, "broker-a-n0", "node.exit", role="broker", signal=9),
                  role(60, "broker-a-n1", 0)])
    got = hosts(evs, nodes, 100.0)
    assert rows(got, "node", "broker_id", "start", "end") == [
        ("broker-a-n0", 0, 5.0, 50.0), ("broker-a-n1", 0, 60.0, 100.0), ("broker-a-n1", 2, 6.0, 60.0)]
    t = truth(got, pauses(faults(evs, 100.0), 100.0), ["T"], 0.0, 100.0)
    assert [(r.start, r.end, r.brokers) for r in t.itertuples()] == [
        (0.0, 5.0, ()), (5.0, 50.0, ("broker-a",)), (50.0, 60.0, ()), (60.0, 100.0, ("broker-a",))]
