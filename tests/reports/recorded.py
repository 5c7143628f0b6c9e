"""Recorded real runs (tests/data/*.tar.gz): a chaos quickstart and the seed-route-timing
scenario, each with the metrics.json the previous, all-Spark engine computed from it
(``expected-metrics.json``), unpacked into a test's own directory."""
from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = ("chaos-quickstart", "seed-route-timing")


def unpack(name: str, into: Path) -> tuple[Path, dict[str, Any]]:
    """``(run dir, the metrics.json recorded with it)``."""
    with tarfile.open(DATA / f"{name}.tar.gz") as tar:
        tar.extractall(into, filter="data")
    run = into / name
    expected = json.loads((run / "expected-metrics.json").read_text())
    (run / "expected-metrics.json").unlink()
    return run, expected


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to 9 significant digits (sums in another order)."""
    if isinstance(value, float):
        return (value if value == 0 or not math.isfinite(value)
                else round(value, 8 - int(math.floor(math.log10(abs(value))))))
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value
