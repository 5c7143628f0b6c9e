"""The Spark engine: Spark schedules and distributes the work, its Python tasks read and parse the
runs' event files themselves (:mod:`reports.core.lines`) and run the core
(:mod:`reports.core.analysis`). No event line is parsed by the JVM or travels through it as a
row: between tasks Spark moves Arrow IPC and pickled tables it does not look inside.

ONE Spark job for any number of runs, planned by :mod:`reports.plan` from the files' sizes:

- a **whole** run (a small one) is read and analysed by one task: nothing is shuffled;
- a **cut** run is read by several tasks (pieces of its files); each sends every *share* of the
  run (a few of its nodes) the piece's tally and truth lines (the few that step 1 reads,
  :func:`~reports.core.analysis.truth_lines`) and that share's node lines; a task per share
  computes the run's truth (:func:`~reports.core.analysis.run_truth`) and the share's part
  (:func:`~reports.core.analysis.node_part`); a task per run combines the parts
  (:func:`~reports.core.analysis.combine`). Whole runs' results pass through untouched.

Why every share computes the truth: a truth task first would need the pieces read twice, or
kept (cached) between two stages; on the 1M-event run that costs as much as the 0.15 s of CPU a
share spends on the truth (bench/README.md), with a stage and a cache more.

Local (``local[*]``) and cluster (``--master spark://...``) run the same job; the executors open
the files at the paths the driver listed (docs/design.md §8).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from functools import reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from rmqemu.errors import RunInputError
from rmqemu.reports.core.analysis import (
    NODE_COLUMNS,
    NODE_KINDS,
    READ_COLUMNS,
    READ_KINDS,
    analyse,
    combine,
    concat,
    node_part,
    run_truth,
    truth_lines,
)
from rmqemu.reports.core.frame import RunInfo, to_frame
from rmqemu.reports.core.lines import Tally, read_piece
from rmqemu.reports.manifest import Manifest, read_manifest
from rmqemu.reports.plan import PIECE_BYTES, SHARE_BYTES, Plan, ReadTask, RunPlan, plan
from rmqemu.reports.results import RunMeta, RunResult, write_tables
from rmqemu.reports.rundir import event_files

Tables = dict[str, Any]
#: What a run's last task returns: ``(meta, tables)``; meta: ``events``, ``bad_lines``, ``info``.
Result = tuple[dict[str, Any], Tables]


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as out:
        out.write_table(table)
    return sink.getvalue().to_pybytes()


def _table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class Job:
    """What every task of one job needs to know (pickled into the tasks): the plan, each run's
    scale and node table, and what to return and write."""

    def __init__(self, the_plan: Plan, manifests: list[Manifest], keep: Callable[[str], bool],
                 queries: Collection[str] | None, tables_to: Mapping[int, str]) -> None:
        self.plan, self.keep, self.queries, self.tables_to = the_plan, keep, queries, dict(tables_to)
        self.scales = [m.scale for m in manifests]
        self.nodes = [m.nodes for m in manifests]
        self.plots_too = keep("p.lanes")

    def _meta(self, run: int, tally: Tally) -> tuple[RunInfo | None, dict[str, Any]]:
        info = RunInfo.of_tally(tally, self.scales[run])
        return info, {"events": tally.good, "bad_lines": dict(tally.bad), "info": info}

    def _finish(self, run: int, meta: dict[str, Any], tables: Tables) -> tuple[Any, Any]:
        if run in self.tables_to:
            write_tables(tables, self.tables_to[run])
        return ("run", run), ("done", (meta, {name: df for name, df in tables.items() if self.keep(name)}))

    def read(self, task: ReadTask) -> Iterator[tuple[Any, Any]]:
        """A read task: its pieces parsed once, keeping the kinds and columns the core reads; a
        whole run analysed, a cut run's lines sent on (the pieces' tally and truth lines to every
        share of the run, each node's lines to its share)."""
        got = [read_piece(p, READ_COLUMNS) for p in task.pieces]
        tally = reduce(Tally.__add__, (t for _, t in got), Tally())
        lines = pa.concat_tables([t for t, _ in got])
        lines = _where(lines, pc.is_in(lines.column("kind"), pa.array(READ_KINDS)))
        run = self.plan.runs[task.run]
        if run.whole:
            yield self._whole(task.run, tally, lines)
            return
        truth = ("truth", (tally, _ipc(truth_lines(lines))))
        yield from ((("share", task.run, s), truth) for s in range(run.n_shares))
        mine = _where(lines, pc.and_(pc.is_in(lines.column("kind"), pa.array(NODE_KINDS)),
                                     pc.is_valid(lines.column("node")))).select(list(NODE_COLUMNS))
        share = _share_column(mine.column("node"), run)
        present = pc.unique(share).to_pylist()
        for s in present:
            own = mine if len(present) == 1 else mine.filter(pc.equal(share, s))
            yield ("share", task.run, s), ("lines", _ipc(own))

    def _whole(self, run: int, tally: Tally, lines: pa.Table) -> tuple[Any, Any]:
        info, meta = self._meta(run, tally)
        if info is None:
            return ("run", run), ("done", (meta, {}))
        return self._finish(run, meta, analyse(to_frame(lines), info, self.nodes[run], self.plots_too,
                                               self.queries))

    def share(self, records: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        """A share task: the run's tally and truth (step 1, from every piece's truth lines) and the
        node part of its nodes (step 2); the first share also hands the truth on to the run's last
        task, and whole runs' results pass on."""
        for key, values in _grouped(records).items():
            if key[0] == "run":
                yield from ((key, v) for v in values)
                continue
            _, run, s = key
            pieces = [v for what, v in values if what == "truth"]
            info, meta = self._meta(run, reduce(Tally.__add__, (t for t, _ in pieces), Tally()))
            if info is None:
                if s == 0:
                    yield ("run", run), ("done", (meta, {}))
                continue
            truth = run_truth(to_frame(pa.concat_tables([_table(lines) for _, lines in pieces])), info,
                              self.nodes[run])
            own = [_table(v) for what, v in values if what == "lines"]
            if own:
                yield ("run", run), ("part", node_part(to_frame(pa.concat_tables(own)), truth, info, self.queries))
            if s == 0:
                yield ("run", run), ("truth", (truth, info, meta))

    def combine(self, records: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        """A cut run's last task: its parts combined (step 3); a whole run's result passes."""
        for key, values in _grouped(records).items():
            done = [v for what, v in values if what == "done"]
            if done:
                yield key, ("done", done[0])
                continue
            truth, info, meta = next(v for what, v in values if what == "truth")
            parts = [v for what, v in values if what == "part"]
            yield self._finish(key[1], meta, combine(concat(parts), truth, info, self.plots_too, self.queries))


def _grouped(records: Iterable[tuple[Any, Any]]) -> dict[Any, list[Any]]:
    by_key: dict[Any, list[Any]] = {}
    for key, value in records:
        by_key.setdefault(key, []).append(value)
    return by_key


def _files(run_dirs: list[str]) -> list[list[tuple[str, int]]]:
    """Each run's files (:func:`reports.rundir.event_files`); a file listed for two run dirs (one
    spelled two ways) is bad input."""
    seen: dict[str, str] = {}
    out = []
    for run_dir in run_dirs:
        files = event_files(run_dir)
        for path, _ in files:
            key = path if "://" in path else os.path.realpath(path)
            if seen.setdefault(key, run_dir) != run_dir:
                raise RunInputError(f"{path}: read for two run directories ({seen[key]} and {run_dir}); "
                                    "give each run directory once")
        out.append(files)
    return out


def _where(table: pa.Table, mask: pa.ChunkedArray) -> pa.Table:
    """The rows of ``table`` where ``mask`` is true (null: false); ``table`` itself when all are."""
    mask = pc.fill_null(mask, False)
    return table if pc.all(mask).as_py() is not False else table.filter(mask)


def _share_column(nodes: pa.ChunkedArray, run: RunPlan) -> pa.Array:
    names = pc.unique(nodes)
    of = pa.array([run.share_of(n) for n in names.to_pylist()], pa.int32())
    return pc.take(of, pc.index_in(nodes, names))


def analyse_runs(spark: SparkSession, run_dirs: list[str], keep: Callable[[str], bool] = lambda name: True,
                 progress: Callable[[str], None] = lambda message: None,
                 queries: Collection[str] | None = None, tables_to: list[str] | None = None,
                 share_bytes: int = SHARE_BYTES, piece_bytes: int = PIECE_BYTES) -> list[RunResult]:
    """Every run of ``run_dirs`` analysed in one Spark job: its :class:`RunResult` with the tables
    whose name ``keep`` accepts (``m.*`` metrics queries, ``p.*`` plot tables, the derived
    tables); ``queries``: only these metrics queries, and only the work they need;
    ``tables_to``: per run, the directory its last task writes the derived tables to as Parquet
    (:func:`reports.results.write_tables`; the executors must reach it); ``share_bytes``: a run
    with fewer bytes of logs is analysed whole (0: every run node by node); ``piece_bytes``: the
    most a read task of a larger run parses (:mod:`reports.plan`). Raises
    :class:`rmqemu.errors.RunInputError` for unusable input."""
    if len(set(run_dirs)) != len(run_dirs):
        raise RunInputError("the same run directory is given twice: " + ", ".join(
            sorted({d for d in run_dirs if run_dirs.count(d) > 1})))
    progress(f"reading {', '.join(run_dirs)} (manifest, events/*.jsonl, faults.jsonl)")
    manifests = [read_manifest(spark, rd) for rd in run_dirs]
    the_plan = plan(_files(run_dirs), share_bytes, piece_bytes)
    job = Job(the_plan, manifests, keep, queries, dict(enumerate(tables_to or [])))
    progress("analysing: each small run in the task that reads it; a large one read in pieces, "
             "then its nodes in shares, then its metrics")
    sc = spark.sparkContext
    reads = sc.parallelize(the_plan.reads, len(the_plan.reads)).flatMap(job.read)
    if not the_plan.cut:
        return _results(run_dirs, manifests, reads.collect())
    keys = [("share", r.run, s) for r in the_plan.cut for s in range(r.n_shares)]
    shares = {key: i for i, key in enumerate(keys)}
    n = len(shares)
    got = (reads.partitionBy(n, lambda key: shares[key] if key[0] == "share" else key[1] % n).mapPartitions(job.share)
           .partitionBy(len(run_dirs), lambda key: key[1]).mapPartitions(job.combine).collect())
    return _results(run_dirs, manifests, got)


def _results(run_dirs: list[str], manifests: list[Manifest], got: list[tuple[Any, Any]]) -> list[RunResult]:
    results: dict[int, Result] = {key[1]: value for key, (_, value) in got}
    out = []
    for run_id, (run_dir, manifest) in enumerate(zip(run_dirs, manifests, strict=True)):
        if run_id not in results:  # Spark returned without the run's analysis: never silently
            raise RuntimeError(f"{run_dir}: the Spark job returned no analysis of this run")
        meta, tables = results[run_id]
        if meta["info"] is None:
            raise RunInputError(f"{run_dir.rstrip('/')}/events: no readable events")
        out.append(RunResult(RunMeta(run_dir, run_id, manifest, meta["info"], meta["events"], meta["bad_lines"]),
                             tables))
    return out


def names(prefixes: Iterable[str]) -> Callable[[str], bool]:
    """A ``keep`` for :func:`analyse_runs`: names starting with one of ``prefixes``."""
    wanted = tuple(prefixes)
    return lambda name: name.startswith(wanted)
