"""The whole analysis of a hand-made run, as the core tests call it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from rmqemu.reports.core.analysis import analyse
from rmqemu.reports.core.frame import RunInfo, events


def analysed(lines: list[dict[str, Any]], scale: float = 1.0) -> dict[str, pd.DataFrame]:
    """Every table :func:`analyse` makes of ``lines`` (one run, ``timing.scale`` = ``scale``)."""
    ev = events(lines)
    return analyse(ev, RunInfo.of(ev, scale), {})
