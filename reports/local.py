"""The analysis in this process, without Spark: a run directory read with the same reader the
Spark tasks use (:mod:`reports.core.lines`) and analysed by :func:`reports.core.analysis.analyse`.

What the JVM-free tests use (the same reader and core functions the Spark engine runs in its
tasks), and a way to look at one small run from a notebook.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from functools import reduce

import pyarrow as pa

from rmqemu.errors import RunInputError
from rmqemu.reports.core.analysis import analyse
from rmqemu.reports.core.frame import RunInfo, to_frame
from rmqemu.reports.core.lines import Piece, Tally, read_piece
from rmqemu.reports.core.schema import EVENTS, FILE
from rmqemu.reports.manifest import read_manifest
from rmqemu.reports.results import RunMeta, RunResult
from rmqemu.reports.rundir import event_files


def read_run(run_dir: str, run_id: int = 0) -> tuple[RunMeta, pa.Table]:
    """A run directory's manifest and readable events (:data:`reports.core.schema.EVENTS`, every
    column); broken lines (docs/design.md §6) are counted per file."""
    manifest = read_manifest(None, run_dir)
    tables, tallies = [], []
    for i, (path, _) in enumerate(event_files(run_dir)):
        name = os.path.basename(path)
        table, tally = read_piece(Piece(path, name, i), EVENTS.names)
        tables.append(table.add_column(len(table.schema) - 1, pa.field(FILE, pa.string()),
                                       pa.array([name] * len(table), pa.string())))
        tallies.append(tally)
    total = reduce(Tally.__add__, tallies, Tally())
    info = RunInfo.of_tally(total, manifest.scale)
    if info is None:
        raise RunInputError(f"{run_dir.rstrip('/')}/events: no readable events")
    return RunMeta(run_dir, run_id, manifest, info, total.good, total.bad), pa.concat_tables(tables)


def analyse_dirs(run_dirs: Iterable[str], plots_too: bool = True) -> list[RunResult]:
    """Every run of ``run_dirs`` read and analysed in this process."""
    out = []
    for i, run_dir in enumerate(run_dirs):
        meta, events = read_run(run_dir, i)
        tables = analyse(to_frame(events), meta.info, meta.manifest.nodes, plots_too)
        out.append(RunResult(meta, tables))
    return out
