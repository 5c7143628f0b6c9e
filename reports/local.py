"""The analysis in this process, without Spark: a run directory read with plain Python and
analysed by :func:`reports.core.analysis.analyse`, node after node.

What the JVM-free tests use (the same core functions the Spark engine runs in its tasks), and
a way to look at one small run from a notebook. Reads local run directories only.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from rmqemu.errors import RunInputError
from rmqemu.reports.core.analysis import analyse
from rmqemu.reports.core.frame import RunInfo, table_of, to_frame
from rmqemu.reports.manifest import read_manifest
from rmqemu.reports.results import RunMeta, RunResult
from rmqemu.reports.rundir import event_paths


def _records(path: str) -> Iterator[dict[str, Any] | None]:
    """Each line of a JSON-lines file as a dict, or None when it is not a JSON object."""
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                yield None
                continue
            yield rec if isinstance(rec, dict) else None


def read_run(run_dir: str, run_id: int = 0) -> tuple[RunMeta, pa.Table]:
    """A run directory's manifest and readable events (:data:`reports.core.schema.EVENTS`);
    broken lines (not JSON, no ``ts``, a value of the wrong type) are counted per file."""
    manifest = read_manifest(None, run_dir)
    tables, bad, seq = [], {}, 0
    for path in event_paths(run_dir):
        name = os.path.basename(path)
        recs = list(_records(path))
        good = [r for r in recs if r is not None]
        table, wrong = table_of(good, name, seq)
        seq += len(recs)
        tables.append(table)
        if wrong + len(recs) - len(good):
            bad[name] = wrong + len(recs) - len(good)
    events = pa.concat_tables(tables)
    if not len(events):
        raise RunInputError(f"{run_dir.rstrip('/')}/events: no readable events")
    ev = to_frame(events.select(["ts", "kind"]))
    info = RunInfo.of(ev, manifest.scale)
    return RunMeta(run_dir, run_id, manifest, info, len(events), bad), events


def analyse_dirs(run_dirs: Iterable[str], plots_too: bool = True) -> list[RunResult]:
    """Every run of ``run_dirs`` read and analysed in this process."""
    out = []
    for i, run_dir in enumerate(run_dirs):
        meta, events = read_run(run_dir, i)
        tables = analyse(to_frame(events), meta.info, meta.manifest.nodes, plots_too)
        out.append(RunResult(meta, tables))
    return out
