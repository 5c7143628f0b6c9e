"""What an analysis of a run gives back, whichever engine ran it, and its metrics.json document.

:class:`RunMeta` is what the load knows of a run (manifest, bounds, counts, broken lines);
:class:`RunResult` adds the tables the core computed (:func:`reports.core.analysis.combine`).
:func:`document` turns them into metrics.json (:mod:`reports.metrics` assembles it).
"""
from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rmqemu.reports.core.analysis import TABLES
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.manifest import Manifest

Rows = list[dict[str, Any]]


@dataclass
class RunMeta:
    """A loaded run: its manifest, numbers (:class:`RunInfo`), readable event count and
    broken lines per file. ``key``: the run dir as given; ``id``: its index in the load."""

    key: str
    id: int
    manifest: Manifest
    info: RunInfo
    event_count: int
    bad_lines: dict[str, int] = field(default_factory=dict)

    @property
    def run_start(self) -> float:
        return self.info.run_start

    @property
    def run_end(self) -> float:
        return self.info.run_end


@dataclass
class RunResult:
    """A run and its analysis: metrics queries (``m.*``), plot tables (``p.*``) and the
    derived tables, by name (:mod:`reports.core.analysis`)."""

    meta: RunMeta
    tables: dict[str, pd.DataFrame]


def plain(value: Any) -> Any:
    """A cell as plain JSON-safe Python: numpy scalars to int/float/bool, NA/NaN/inf to None,
    tuples and arrays to lists, dicts recursively."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if isinstance(value, (tuple, list, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def rows(df: pd.DataFrame, order: Iterable[str] | None = None) -> Rows:
    """``df`` as a list of plain dicts (:func:`plain`), sorted by the columns ``order``
    (nulls first, as an ascending Spark ``orderBy``)."""
    out = [{k: plain(v) for k, v in r.items()} for r in df.to_dict("records")]
    keys = list(order or ())
    if keys:
        out.sort(key=lambda r: tuple((r.get(c) is not None, r.get(c)) for c in keys))
    return out


def write_tables(tables: Mapping[str, pd.DataFrame], out: str) -> list[str]:
    """The derived tables of an analysed run (:data:`reports.core.analysis.TABLES`) as Parquet,
    ``out/<name>/part-0.parquet`` (what was there before is replaced); returns the names. Run
    by the run's Spark task, so a large run's tables never pass through the driver."""
    root = Path(out)
    if root.is_dir():
        shutil.rmtree(root)
    for name, source in TABLES.items():
        (root / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(tables[source], preserve_index=False), root / name / "part-0.parquet")
    return list(TABLES)
