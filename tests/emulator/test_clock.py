"""The skewable clock's offset maths (DESIGN section 3)."""
from __future__ import annotations

import pytest

from emulator.node.clock import ClockSetting


def test_strobe_starts_shifted_and_switches_every_period() -> None:
    s = ClockSetting(strobe_delta_ms=1000.0, strobe_period_ms=500.0, since_ms=10_000.0)
    got = [s.offset_at(10_000.0 + t) for t in (0, 250, 499, 500, 999, 1000, 1500)]
    assert got == [1000.0, 1000.0, 1000.0, 0.0, 0.0, 1000.0, 0.0]


def test_bump_and_drift_add_up() -> None:
    s = ClockSetting(offset_ms=-200.0, drift_ppm=500.0, since_ms=0.0)
    assert s.offset_at(0.0) == -200.0
    assert s.offset_at(10_000.0) == pytest.approx(-195.0)  # 500 ppm of 10 s = 5 ms
    assert s.offset_at(-5.0) == -200.0  # before since_ms: no drift yet
