"""Reading helpers for the multiprocess fault tests (tests/integration/test_faults_*.py).

The tests start faults through the public API (``emulator.Cluster``'s verbs, docs/testing.md);
these helpers only read effects back, from the nodes' own events or state, never from the
injector.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable

import pytest

from rmqemu.emulator.chaos import Cluster
from rmqemu.emulator.node.clock import ClusterTime
from rmqemu.emulator.testing import kill_survivors, process_alive, process_stopped, read_events, run_processes  # noqa: F401

SCALE = 0.01
EXPIRY_MS = 120_000 * SCALE  # BROKER_CHANNEL_EXPIRED_TIME, scaled
IDLE_SLACK_MS = 25.0  # a frame is received a few ms before the namesrv stamps it (handler time)


def fault_events(c: Cluster, fault_id: str, kind: str = "fault.start") -> list[dict[str, Any]]:
    return read_events(c.run_dir, kind, where=lambda e: e.get("fault_id") == fault_id)


def ns_broker(c: Cluster, broker_node: str, change: str | Iterable[str], ns: str | None = None,
              after: float = 0.0) -> list[dict[str, Any]]:
    """The namesrvs' ``ns.broker`` events about one broker node (``change`` one or several)."""
    changes = {change} if isinstance(change, str) else set(change)
    addr = c.addrs[broker_node]
    return read_events(c.run_dir, "ns.broker", node=ns, where=lambda e: e.get("change") in changes
                       and e.get("broker_addr") == addr and e["ts"] > after)


def dropped(c: Cluster, broker_node: str, ns: str | None = None, after: float = 0.0) -> list[dict[str, Any]]:
    """RocketMQ drops a silent broker by the 120 s scan (``expired``) or by the 120 s idle close of
    its channel (``channel_destroy``): both are faithful, whichever fires first."""
    return ns_broker(c, broker_node, ("expired", "channel_destroy"), ns, after)


def live_stamp(c: Cluster, ns: str, broker_node: str) -> float | None:
    """The namesrv's ``lastUpdateTimestamp`` of a broker, None if not live. The role stamps it
    with its cluster wall clock; returned as host wall ms (its clock, unskewed in these tests),
    comparable with events' ``ts``."""
    entry = c.state(ns).get("brokerLiveTable", {}).get(c.addrs[broker_node])
    if entry is None:
        return None
    return ClusterTime(c.scale, c.started_ms).host_wall_ms(float(entry["lastUpdateTimestamp"]))


def sends(c: Cluster, producer: str, outcome: str | None = None, after: float = 0.0,
          before: float = float("inf")) -> list[dict[str, Any]]:
    """``send`` events of a producer whose *attempt started* in [after, before) (ts - latency)."""
    return read_events(c.run_dir, "send", node=producer, where=lambda e: (outcome is None or e["outcome"] == outcome)
                       and after <= e["ts"] - e["latency_ms"] < before)


def median_latency(events: list[dict[str, Any]]) -> float:
    return statistics.median(e["latency_ms"] for e in events)


# -- processes of a run, for subprocess tests (launch, up) ------------------------------------

def rmqemu(*args: str) -> list[str]:
    return [sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()", *args]


def run_cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(rmqemu(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd)


manifest_procs = run_processes  # the names these tests grew up with
alive = process_alive
stopped = process_stopped


def wait_until(cond: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.05)
