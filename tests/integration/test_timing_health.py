"""Timing health on real processes (docs/design.md §9): every node writes ``node.lag``, a run
whose host cannot keep up gets the launcher's warning while it runs, and a control command missed
by a node that far behind is said as overload.

No upper bounds on lateness (the host is shared): the values are checked for shape and sanity,
and the overloaded case uses a scale at which keeping up is impossible rather than hoping for load.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from rmqemu.emulator.chaos import Cluster
from rmqemu.emulator.cli.launch import run_topology
from rmqemu.emulator.launcher.topology_load import parse_topology
from rmqemu.emulator.testing import read_events
from rmqemu.errors import HostOverloaded
from tests.eventdoc import contract_problems

SMALL = {
    "name": "lag",
    "timing": {"scale": 0.01},
    "namesrvs": 1,
    "brokers": [{"name": "broker-a", "autoCreateTopicEnable": True}],
    "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 2}],
    "producers": [{"group": "pg-1", "topics": ["T"], "rate": 5, "size": 64, "mode": "sync"}],
    "duration": "600s",
}


def test_every_node_writes_sane_node_lag_summaries(start_cluster) -> None:
    c: Cluster = start_cluster(SMALL)
    nodes = set(c.launcher.plans)

    def every_node_twice() -> bool:
        seen = [e["node"] for e in read_events(c.run_dir, "node.lag")]
        return all(seen.count(n) >= 2 for n in nodes)

    c.wait_for(every_node_twice, 60, "two node.lag windows from every node")
    for e in read_events(c.run_dir, "node.lag"):
        assert e["node"] in nodes and e["timers"] >= 1
        assert e["window_ms"] >= 1000.0  # max(1 wall s, 10 cluster s) at 0.01; a stop's last one is shorter
        assert 0.0 <= e["p50_ms"] <= e["p99_ms"] <= e["max_ms"] < 60_000


def test_a_scale_too_small_for_the_host_gets_one_clear_warning_while_running(tmp_path: Path) -> None:
    # At 0.001 the threshold is 0.5 wall ms (5 % of the 10 s scan, 10 wall ms): zmq's poll waits
    # whole ms, so timers run up to 1 ms late by construction and the p99 cannot stay below it.
    # rate 1: 1,000 messages per wall second at 0.001, within the host limit (docs/design.md §5)
    producers = [{**SMALL["producers"][0], "rate": 1}]
    topo = parse_topology({**SMALL, "producers": producers, "timing": {"scale": 0.001}, "duration": "8000s"}, "test")
    lines: list[str] = []
    result = run_topology(topo, run_dir=tmp_path / "run", progress=False, log=lines.append)
    warnings = [x for x in lines if "falling behind" in x]
    assert warnings, lines
    assert len(warnings) <= 6, warnings  # a couple of lines, not one per node per second
    first = warnings[0]
    assert any(n in first for n in ("namesrv-0", "broker-a-0", "pg-1-0")) and "timing.scale" in first
    assert read_events(result.run_dir, "node.lag")
    assert contract_problems(result.run_dir) == []  # node.lag lines match the event registry


def test_a_node_too_far_behind_to_ack_the_link_table_is_said_as_overload(start_cluster) -> None:
    """docs/design.md §9, "Overload", end to end: the real control plane's missed deadline, the
    node's real node.lag file. The node's lateness is made by stopping it behind the launcher's
    back (no pause fault: its timers just run late on SIGCONT, as on a saturated host), not by
    loading the shared host; it must exceed half the 5 s deadline."""
    c: Cluster = start_cluster(SMALL)
    proc = c.launcher.procs["pg-1-0"]
    proc.send_signal(signal.SIGSTOP)
    try:
        c.wait_for(proc.is_stopped, 30, "pg-1-0 to stop")
        time.sleep(3.0)  # the lateness itself: time the node's timers cannot run
        proc.send_signal(signal.SIGCONT)
        c.wait_for(lambda: any(e["p99_ms"] >= 2900 for e in read_events(c.run_dir, "node.lag")
                               if e["node"] == "pg-1-0"), 30, "pg-1-0's late node.lag window")
        proc.send_signal(signal.SIGSTOP)
        c.wait_for(proc.is_stopped, 30, "pg-1-0 to stop again")
        with pytest.raises(HostOverloaded, match=r"^the host cannot keep up with 3 nodes at timing.scale 0.01: "
                                                 r"pg-1-0 did not answer the launcher's 'set_links' within 5000 ms; "
                                                 r"its timers ran \d+ ms late"):
            c.launcher.push_links()
    finally:
        proc.send_signal(signal.SIGCONT)
