"""Durations as users write them in topology files and on the command line: ``5s``, ``150ms``,
``2m``, ``1h`` or a plain number of seconds. All topology durations are in *cluster* seconds."""

from __future__ import annotations

import re
from typing import Any

_UNITS_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION_RE = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(ms|s|min|m|h)?\s*$")


def parse_duration_s(value: Any, *, allow_negative: bool = False) -> float:
    """Seconds from ``value``; raises ValueError saying what was expected."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like '5s', '150ms', '2m' or a number, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION_RE.match(value)):
        seconds = float(m.group(1)) * _UNITS_S[m.group(2) or "s"]
    else:
        raise ValueError(f"expected a duration like '5s', '150ms', '2m' or a number, got {value!r}")
    if seconds < 0 and not allow_negative:
        raise ValueError(f"must not be negative, got {value!r}")
    return seconds
