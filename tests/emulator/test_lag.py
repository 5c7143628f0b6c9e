"""Timer lateness (docs/design.md §9): the pure accounting, and the runtime's ``node.lag`` lines,
on a fake clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqemu import jsonlines, timing
from rmqemu.emulator.node.clock import ClusterTime, FakeClock, SkewableClock
from rmqemu.emulator.node.io import EventLog, StoreDir
from rmqemu.emulator.node.lag import LagMeter, percentile
from rmqemu.emulator.node.runtime import Runtime
from rmqemu.emulator.roles.common.base import Action, Every, Now, Role
from rmqemu.emulator.transport.fake import FakeTransport


def test_window_is_one_wall_second_or_ten_cluster_seconds() -> None:
    assert timing.window_ms(0.01) == 1000.0
    assert timing.window_ms(0.001) == 1000.0
    assert timing.window_ms(1.0) == 10000.0


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([7.0], 0.99) == 7.0


def test_meter_summarises_a_window_and_starts_the_next() -> None:
    clock = FakeClock(0.0)
    meter = LagMeter(1000.0, clock())
    for late in [0.0] * 98 + [4.0, 40.0]:
        meter.record(clock(), clock() + late)
        clock.advance(5)
    assert meter.due(clock()) is None  # 500 ms into the window
    clock.advance(500)
    got = meter.due(clock())
    assert got == {"window_ms": 1000.0, "timers": 100, "p50_ms": 0.0, "p99_ms": 4.0, "max_ms": 40.0}
    assert meter.due(clock.advance(2000)) is None  # no firings: nothing to say
    meter.record(10.0, 5.0)  # ran before due (cannot happen, but never negative)
    assert meter.flush(clock())["max_ms"] == 0.0


class Slow(Role):
    """Two timers due together; each firing takes ``cost`` ms of the fake clock, so the second
    of the pair always runs ``cost`` ms late."""

    role = "probe"

    def __init__(self, clock: FakeClock, cost: float) -> None:
        super().__init__("probe-0", "127.0.0.1:10000")
        self.clock, self.cost = clock, cost

    def start(self, now: Now) -> list[Action]:
        return [Every("a", 10000, 10000), Every("b", 10000, 10000)]

    def on_timer(self, name: str, now: Now) -> list[Action]:
        self.clock.advance(self.cost)
        return []


@pytest.fixture
def lag_rig(tmp_path: Path):
    clock = FakeClock(1_000.0)
    skew = SkewableClock(host=clock)
    events = EventLog(tmp_path / "probe.jsonl", "probe-0", skew.now_ms, host=clock)
    rt = Runtime(Slow(clock, 7.0), FakeTransport(clock=clock), skew, events, StoreDir(tmp_path / "store"),
                 mono=clock, cluster_time=ClusterTime(scale=0.01))

    def lags() -> list[dict[str, Any]]:
        lines = jsonlines.records(tmp_path / "probe.jsonl")
        return [e for e in lines if e["kind"] == "node.lag"]

    return rt, clock, lags


def test_runtime_writes_one_node_lag_per_window_and_a_last_one_on_stop(lag_rig) -> None:
    rt, clock, lags = lag_rig
    rt.start()  # timers at scale 0.01: every 100 wall ms
    while clock.current_ms < 3_500:
        rt.step(max_wait_ms=5)
    got = lags()
    assert len(got) == 2  # windows end at 2000 and 3000 (plus a firing's cost)
    for e in got:
        assert 1000 <= e["window_ms"] < 1100 and e["timers"] >= 18
        assert e["max_ms"] >= 7.0 and e["p99_ms"] >= 7.0 and e["p50_ms"] <= e["p99_ms"] <= e["max_ms"]
    rt.begin_stop()
    assert len(lags()) == 3 and lags()[-1]["window_ms"] < 1000


def test_a_frozen_node_shows_the_freeze_as_lateness(lag_rig) -> None:
    rt, clock, lags = lag_rig
    rt.start()
    rt.step(0)
    clock.advance(5_000)  # SIGSTOPped: the report and the launcher drop this window by the pause
    rt.step(0)
    assert lags()[-1]["max_ms"] >= 4_900  # due at 1100, run at 6000+


def test_threshold_and_suggested_scale() -> None:
    assert timing.threshold_ms(0.01) == pytest.approx(5.0)  # 5 % of the 10 s scan at 0.01
    assert timing.shortest_period_ms([{}, {"pollNameServerInterval": 5000}]) == 5000.0
    assert timing.shortest_period_ms([{"heartbeatBrokerInterval": 60000}]) == 10000.0
    assert timing.suggested_scale(0.01, 20.0, 5.0) == pytest.approx(0.04)
    assert timing.suggested_scale(0.01, 23.0, 5.0) == pytest.approx(0.046)
    assert timing.suggested_scale(0.01, 2.0, 5.0) == 0.01
