"""The runtime loop at a cluster time scale, with a fake transport and a fake clock: the role's
cluster ms, durations in host ms, and the wall-clock floors of timers and requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqemu.emulator.node.clock import ClusterTime, FakeClock, SkewableClock
from rmqemu.emulator.node.io import EventLog, StoreDir
from rmqemu.emulator.node.runtime import Runtime
from rmqemu.emulator.protocol import request
from rmqemu.emulator.roles.common.base import After, Every, Request
from rmqemu.emulator.transport.fake import FakeTransport
from tests.emulator.test_runtime import PEER, Probe, run_until


def test_the_role_sees_cluster_ms_and_its_durations_wait_host_ms(tmp_path: Path) -> None:
    """ClusterTime is the one conversion: Now in cluster ms, Every/After/Request durations times
    the scale, with the actions' wall-clock floors."""
    clock = FakeClock(1_000.0)
    role = Probe()
    transport = FakeTransport(clock=clock)
    skew = SkewableClock(host=clock)
    rt = Runtime(role, transport, skew, EventLog(None, "probe-0", skew.now_ms, host=clock), StoreDir(None),
                 mono=clock, cluster_time=ClusterTime(scale=0.01, anchor_ms=400.0))
    role.on_start = [Every("poll", 30_000, 30_000), After("once", 5_000),
                     Every("tick", 10, 10, min_period_wall_ms=2.0)]
    rt.start()
    now = rt.now()
    assert (now.mono_ms, now.host_mono_ms) == (pytest.approx(100_000), 1_000.0)
    assert now.wall_ms == pytest.approx(400 + 600 / 0.01)
    run_until(rt, clock, 1_000 + 700)
    assert role.timer_times("poll") == [pytest.approx(130_000), pytest.approx(160_000)]  # every 300 host ms
    assert role.timer_times("once") == [pytest.approx(105_000)]
    assert rt.timers.entries["tick"].period == 2.0  # 0.1 host ms, raised to the 2 ms floor

    rt._perform([Request(PEER, request(105), 3_000, role.reply_handler, min_timeout_wall_ms=200.0),
                 Request(PEER, request(105), 30_000, role.reply_handler, min_timeout_wall_ms=200.0)])
    run_until(rt, clock, clock.current_ms + 199)
    assert role.replies == []
    run_until(rt, clock, clock.current_ms + 2)  # 30 host ms floored to 200
    assert role.replies == [None]
    run_until(rt, clock, clock.current_ms + 100)  # 300 host ms, above the floor
    assert role.replies == [None, None]


@pytest.mark.parametrize(("floor", "waits"), [(200.0, 200.0), (0.0, 30.0)])
def test_every_request_waits_the_node_floor_at_scale_001(floor: float, waits: float) -> None:
    """timing.minRequestTimeoutWallMs (docs/design.md §3): a 3000 ms request at scale 0.01 waits
    the node's floor, not 30 host ms; floor 0 is exact scaling. Above the floor (30000 ms: 300
    host ms) nothing changes."""
    clock = FakeClock(1_000.0)
    role = Probe()
    skew = SkewableClock(host=clock)
    rt = Runtime(role, FakeTransport(clock=clock), skew, EventLog(None, "probe-0", skew.now_ms, host=clock),
                 StoreDir(None), mono=clock, cluster_time=ClusterTime(scale=0.01, min_request_wall_ms=floor))
    rt.start()
    start = clock.current_ms
    rt._perform([Request(PEER, request(105), 3_000, role.reply_handler),
                 Request(PEER, request(105), 30_000, role.reply_handler)])
    run_until(rt, clock, start + waits - 1)
    assert role.replies == []
    run_until(rt, clock, start + waits + 1)
    assert role.replies == [None]
    run_until(rt, clock, start + 301)
    assert role.replies == [None, None]
