"""The launcher's live timing check on hand-written event files (docs/design.md §9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rmqemu.emulator.launcher.lagwatch import LagWatch
from rmqemu.emulator.node.clock import FakeClock


def lag(node: str, ts: float, p99: float, window: float = 1000.0) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "node.lag", "window_ms": window, "timers": 50,
            "p50_ms": 0.1, "p99_ms": p99, "max_ms": p99}


def append(path: Path, *events: dict[str, Any], torn: str = "") -> None:
    with path.open("a") as f:
        f.write("".join(json.dumps(e) + "\n" for e in events) + torn)


def rig(tmp_path: Path, configs: list[dict[str, Any]] | None = None) -> tuple[LagWatch, FakeClock]:
    (tmp_path / "events").mkdir()
    clock = FakeClock(0.0)
    return LagWatch(tmp_path, 0.01, configs or [{}], mono=clock), clock


def test_warns_once_naming_the_worst_node_and_again_only_when_it_doubles(tmp_path: Path) -> None:
    watch, clock = rig(tmp_path)
    ev = tmp_path / "events"
    append(ev / "namesrv-0.jsonl", lag("namesrv-0", 9_000, 40.0), lag("namesrv-0", 10_000, 1.0))
    assert watch.poll() is None  # one window over 5 ms (a start-up spike) is tolerated
    append(ev / "broker-a-0.jsonl", lag("broker-a-0", 10_000, 25.0), lag("broker-a-0", 11_000, 20.0),
           torn='{"ts": 1')
    append(ev / "namesrv-0.jsonl", lag("namesrv-0", 11_000, 8.0))
    assert watch.poll() is None  # not a second since the last look
    clock.advance(1000)
    line = watch.poll()
    assert line is not None and "broker-a-0" in line and "20.0 wall ms" in line and "scale 0.04 " in line
    append(ev / "broker-a-0.jsonl", lag("broker-a-0", 12_000, 30.0))
    clock.advance(1000)
    assert watch.poll() is None  # 30 < 2 x 20: no flood
    append(ev / "pg-1-0.jsonl", lag("pg-1-0", 12_000, 45.0))
    clock.advance(1000)
    assert watch.poll() is None  # pg-1-0's first window: no verdict yet
    append(ev / "pg-1-0.jsonl", lag("pg-1-0", 13_000, 50.0))
    clock.advance(1000)
    assert "pg-1-0" in (watch.poll() or "")


def test_windows_overlapping_a_pause_and_stopped_nodes_are_ignored(tmp_path: Path) -> None:
    watch, clock = rig(tmp_path)
    ev = tmp_path / "events"
    append(tmp_path / "faults.jsonl",
           {"ts": 5_000, "node": "injector", "kind": "fault.start", "fault_id": "f1", "fault": "pause",
            "targets": ["broker-b-0"], "params": {}},
           {"ts": 6_000, "node": "injector", "kind": "fault.end", "fault_id": "f1", "fault": "pause",
            "targets": ["broker-b-0"], "params": {}})
    append(ev / "broker-b-0.jsonl", lag("broker-b-0", 6_500, 1500.0, window=2000.0))
    assert watch.poll() is None
    append(ev / "broker-b-0.jsonl", lag("broker-b-0", 8_000, 9.0), lag("broker-b-0", 9_000, 9.0))  # the host
    clock.advance(1000)
    assert "broker-b-0" in (watch.poll() or "")


def test_threshold_follows_the_shortest_configured_period(tmp_path: Path) -> None:
    watch, _ = rig(tmp_path, [{"pollNameServerInterval": 2000}])
    assert watch.threshold_ms == 1.0  # 5 % of 2 s at 0.01


def test_windows_that_began_before_the_cluster_was_up_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    clock = FakeClock(0.0)
    watch = LagWatch(tmp_path, 0.01, [{}], mono=clock, since_ms=10_500)
    ev = tmp_path / "events"
    append(ev / "cg-6.jsonl", lag("cg-6", 10_000, 700.0), lag("cg-6", 11_000, 600.0))  # spawning
    assert watch.poll() is None
    append(ev / "cg-6.jsonl", lag("cg-6", 12_000, 9.0), lag("cg-6", 13_000, 8.0))
    clock.advance(1000)
    line = watch.poll()
    assert line is not None and "cg-6's timers ran 8.0 wall ms" in line
