"""The skewable clock's offset maths (docs/design.md §3)."""
from __future__ import annotations

import pytest

from rmqemu.emulator.node.clock import ClockSetting, ClusterTime, SkewableClock


def test_strobe_starts_shifted_and_switches_every_period() -> None:
    s = ClockSetting(strobe_delta_ms=1000.0, strobe_period_ms=500.0, since_ms=10_000.0)
    got = [s.offset_at(10_000.0 + t) for t in (0, 250, 499, 500, 999, 1000, 1500)]
    assert got == [1000.0, 1000.0, 1000.0, 0.0, 0.0, 1000.0, 0.0]


def test_bump_and_drift_add_up() -> None:
    s = ClockSetting(offset_ms=-200.0, drift_ppm=500.0, since_ms=0.0)
    assert s.offset_at(0.0) == -200.0
    assert s.offset_at(10_000.0) == pytest.approx(-195.0)  # 500 ppm of 10 s = 5 ms
    assert s.offset_at(-5.0) == -200.0  # before since_ms: no drift yet


def test_cluster_time_divides_monotonic_time_and_stretches_wall_time_around_the_anchor() -> None:
    ct = ClusterTime(scale=0.01, anchor_ms=1_700_000_000_000.0)
    now = ct.now(host_mono_ms=5_000.0, skewed_wall_ms=1_700_000_000_000.0 + 600.0)
    assert now.mono_ms == pytest.approx(500_000.0) and now.host_mono_ms == 5_000.0
    assert now.wall_ms == pytest.approx(1_700_000_000_000.0 + 60_000.0)  # 600 wall ms = 60 cluster s
    assert ClusterTime(0.01, 0.0).now(1.0, 2.0).wall_ms == pytest.approx(200.0)  # a hand-made spec: anchor 0
    assert ct.host_wall_ms(now.wall_ms) == pytest.approx(1_700_000_000_000.0 + 600.0)  # and back


def test_cluster_durations_become_host_ms_with_a_wall_floor() -> None:
    ct = ClusterTime(scale=0.01)
    assert ct.host_ms(30_000) == pytest.approx(300.0)
    assert ct.host_ms(3_000, 200.0) == 200.0 and ct.host_ms(30_000, 200.0) == pytest.approx(300.0)
    with pytest.raises(ValueError):
        ClusterTime(scale=0)


def test_a_host_clock_bump_is_that_much_cluster_time_over_the_scale() -> None:
    """``rmqemu skew +130s`` at scale 0.01 sets a 1300 ms host offset: RocketMQ logic sees 130000 ms."""
    host = [1_700_000_100_000.0]
    clock = SkewableClock(host=lambda: host[0])
    ct = ClusterTime(scale=0.01, anchor_ms=1_700_000_000_000.0)
    before = ct.now(0.0, clock.now_ms()).wall_ms
    clock.set(ClockSetting(offset_ms=1_300.0))
    assert ct.now(0.0, clock.now_ms()).wall_ms - before == pytest.approx(130_000.0)


def test_request_host_ms_is_the_max_of_scaled_node_floor_and_request_floor() -> None:
    ct = ClusterTime(scale=0.01, min_request_wall_ms=200.0)
    assert ct.request_host_ms(3_000) == 200.0  # 30 wall ms, raised to the node floor
    assert ct.request_host_ms(30_000) == pytest.approx(300.0)  # above the floor: exact scaling
    assert ct.request_host_ms(3_000, min_wall_ms=250.0) == 250.0  # a send's own budget is higher
    assert ClusterTime(scale=0.01).request_host_ms(3_000) == pytest.approx(30.0)  # floor 0: exact
    with pytest.raises(ValueError):
        ClusterTime(scale=0.01, min_request_wall_ms=-1.0)
