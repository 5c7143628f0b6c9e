"""The Spark engine: the runs' events read once, the core (:mod:`reports.core.analysis`) run
in Spark tasks keyed by run and node, in ONE Spark job whatever the number of runs:

1. every run's truth, one task per run (:func:`reports.core.analysis.run_truth`): its few
   lifecycle, fault, topic and route lines, and its files' line counts and bounds (the run's
   numbers, its broken lines);
2. every node's part, one task per node (:func:`~reports.core.analysis.node_part`): its lines
   with its run's truth (a cogroup on ``(run, node)``: the truth task hands a copy to each node
   of its run);
3. every run's metrics, plot and derived tables, one task per run
   (:func:`~reports.core.analysis.combine`), collected.

A 1M-event run is cut across tasks by node, a sweep by run; one run and N runs are the same
code. Between tasks the tables travel as pickled pandas frames in a binary column: Spark moves
them, it does not look inside.
"""
from __future__ import annotations

import json
import pickle
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, SparkSession, functions as F

from reports.core.analysis import (
    NODE_COLUMNS, NODE_KINDS, TRUTH_COLUMNS, TRUTH_KINDS, combine, concat, node_part, run_truth,
)
from reports.core.frame import RunInfo, from_json_columns, to_frame
from reports.core.schema import EVENTS
from reports.load import RUN, file_stats, good_events, read_runs
from reports.manifest import Manifest
from reports.results import RunMeta, RunResult, write_tables
from rmqemu.errors import RunInputError

#: What the tasks return: pickled values of a run (``name``: what they are), by node.
BLOB = "run int, node string, name string, data binary"
_BLOB = pa.schema([("run", pa.int32()), ("node", pa.string()), ("name", pa.string()), ("data", pa.binary())])

#: Names of the values that are not tables of the analysis (DONE: the run's last task finished).
META, TRUTH, DONE = "meta", "truth", "done"


def _blobs(run: int | None, rows: Iterable[tuple[str | None, str, bytes]]) -> pa.Table:
    rows = list(rows)
    return pa.table({"run": [run] * len(rows), "node": [r[0] for r in rows], "name": [r[1] for r in rows],
                     "data": [r[2] for r in rows]}, schema=_BLOB)


def _dump(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _wire(columns: Iterable[str]) -> list[Column]:
    """``columns`` as the tasks receive them: nested ones as JSON text (parsed back by
    :func:`reports.core.frame.from_json_columns`)."""
    return [F.to_json(c).alias(c) if pa.types.is_nested(EVENTS.field(c).type) else F.col(c) for c in columns]


def _events(table: pa.Table) -> pd.DataFrame:
    """A group's lines as the core's events frame."""
    return to_frame(from_json_columns(table.drop_columns([RUN])))


def _meta(run: int, stats: pd.DataFrame, manifest: Manifest) -> tuple[RunInfo | None, dict[str, Any]]:
    """The run's numbers and what the driver reports of it, from its files' statistics."""
    good = stats[stats["good"] > 0]
    bad = {unquote(str(f)): int(n) for f, n in stats.groupby("file")["bad"].sum().items() if n}
    meta = {"events": int(stats["good"].sum()), "bad_lines": bad, "info": None}
    if good.empty:
        return None, meta

    def first(col: str) -> float | None:
        return None if good[col].isna().all() else float(good[col].min())
    info = RunInfo(float(good["lo"].min()), float(good["hi"].max()), first("stop"), first("up"), manifest.scale)
    meta["info"] = info
    return info, meta


def _truth_task(manifests: Mapping[int, Manifest]) -> Callable[[pa.Table, pa.Table], pa.Table]:
    def task(lines: pa.Table, stats: pa.Table) -> pa.Table:
        run = (lines if len(lines) else stats).column(RUN)[0].as_py()
        st = stats.to_pandas().rename(columns={"file_name": "file", "node_name": "node"})
        if run is None:  # files the read could not match to a run dir
            return _blobs(None, [(None, "unmatched", _dump(sorted(set(st["file"]))))])
        info, meta = _meta(run, st, manifests[run])
        if info is None:
            return _blobs(run, [(None, META, _dump(meta))])
        truth = _dump((run_truth(_events(lines), info, manifests[run].nodes), info))
        nodes = sorted(set(st.loc[st["good"] > 0, "node"].dropna()))
        return _blobs(run, [(None, META, _dump(meta)), (None, TRUTH, truth), *((n, TRUTH, truth) for n in nodes)])
    return task


def _node_task(queries: Collection[str] | None) -> Callable[[pa.Table, pa.Table], pa.Table]:
    return lambda lines, given: _node_part(lines, given, queries)


def _node_part(lines: pa.Table, given: pa.Table, queries: Collection[str] | None) -> pa.Table:
    """A node's part; the run's own rows (meta, truth: ``node`` null) pass through."""
    run = given.column(RUN)[0].as_py()
    rows = given.to_pylist()
    if rows[0]["node"] is None:
        return _blobs(run, [(None, r["name"], r["data"]) for r in rows])
    if not len(lines):
        return _blobs(run, [])
    truth, info = pickle.loads(rows[0]["data"])
    ev = _events(lines)
    return _blobs(run, [(rows[0]["node"], "part", _dump(node_part(ev, truth, info, queries)))])


def _combine_task(keep: Callable[[str], bool], plots_too: bool, queries: Collection[str] | None,
                  tables_to: Mapping[int, str]) -> Callable[[pa.Table], pa.Table]:
    def task(table: pa.Table) -> pa.Table:
        run = table.column(RUN)[0].as_py()
        rows = table.to_pylist()
        by_name = {r["name"]: r["data"] for r in rows if r["node"] is None}
        if TRUTH not in by_name:
            return _blobs(run, [(None, META, by_name[META])])
        truth, info = pickle.loads(by_name[TRUTH])
        parts = [pickle.loads(r["data"]) for r in rows if r["name"] == "part"]
        out = combine(concat(parts), truth, info, plots_too, queries)
        if run in tables_to:
            write_tables(out, tables_to[run])
        return _blobs(run, [(None, META, by_name[META]), (None, DONE, _dump(True)),
                            *((None, name, _dump(df)) for name, df in out.items() if keep(name))])
    return task


def _partitions(spark: SparkSession, groups: int) -> str:
    """Shuffle partitions for this job: one per group, at most a few per core (Spark's default of
    200 makes a tiny report thousands of empty tasks on a cluster)."""
    return str(max(1, min(groups, 2 * max(spark.sparkContext.defaultParallelism, 1))))


def analyse_runs(spark: SparkSession, run_dirs: list[str], keep: Callable[[str], bool] = lambda name: True,
                 progress: Callable[[str], None] = lambda message: None,
                 queries: Collection[str] | None = None, tables_to: list[str] | None = None) -> list[RunResult]:
    """Every run of ``run_dirs`` analysed in one Spark job: its :class:`RunResult` with the tables
    whose name ``keep`` accepts (``m.*`` metrics queries, ``p.*`` plot tables, the derived
    tables); ``queries``: only these metrics queries, and only the work they need;
    ``tables_to``: per run, the directory its task writes the derived tables to as Parquet
    (:func:`reports.results.write_tables`; the executors must reach it). Raises
    :class:`rmqemu.errors.RunInputError` for unusable input."""
    progress(f"reading {', '.join(run_dirs)} (manifest, events/*.jsonl, faults.jsonl)")
    raw, manifests = read_runs(spark, list(run_dirs))
    events = good_events(raw)
    # renamed: under their own names, Spark 4.3 handed the cogroup's task this aggregate
    # without its file and node columns
    stats = file_stats(raw).select(RUN, F.col("file").alias("file_name"), F.col("node").alias("node_name"),
                                   "good", "bad", "lo", "hi", "stop", "up")
    plots_too = keep("p.lanes")
    truth = (events.filter(F.col("kind").isin(*TRUTH_KINDS)).select(RUN, *_wire(TRUTH_COLUMNS)).groupBy(RUN)
             .cogroup(stats.groupBy(RUN)).applyInArrow(_truth_task(dict(enumerate(manifests))), BLOB))
    parts = (events.filter(F.col("kind").isin(*NODE_KINDS)).select(RUN, *_wire(NODE_COLUMNS)).groupBy(RUN, "node")
             .cogroup(truth.groupBy(RUN, "node")).applyInArrow(_node_task(queries), BLOB))
    job = parts.groupBy(RUN).applyInArrow(
        _combine_task(keep, plots_too, queries, dict(enumerate(tables_to or []))), BLOB)
    progress("analysing: truth per run, then views, staleness and sends per node, then each run's metrics")
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    spark.conf.set(key, _partitions(spark, sum(len(m.nodes) or 1 for m in manifests)))
    try:
        got = job.collect()
    finally:
        spark.conf.set(key, before)
    return _results(run_dirs, manifests, got)


def _results(run_dirs: list[str], manifests: list[Manifest], got: list[Any]) -> list[RunResult]:
    tables: dict[int, dict[str, Any]] = {}
    for r in got:
        if r["run"] is None:
            raise RunInputError(f"{', '.join(pickle.loads(r['data']))}: read, but not matched to any of the run "
                                f"directories {', '.join(run_dirs)} (please report this with the paths)")
        tables.setdefault(r["run"], {})[r["name"]] = pickle.loads(r["data"])
    out = []
    for run_id, (run_dir, manifest) in enumerate(zip(run_dirs, manifests)):
        t = tables.get(run_id, {})
        meta = t.pop(META, None)
        if meta is None or meta["info"] is None:
            raise RunInputError(f"{run_dir.rstrip('/')}/events: no readable events")
        if t.pop(DONE, None) is None:  # Spark returned without the run's analysis: never silently
            raise RuntimeError(f"{run_dir}: the Spark job returned no analysis of this run")
        out.append(RunResult(RunMeta(run_dir, run_id, manifest, meta["info"], meta["events"], meta["bad_lines"]), t))
    return out


def names(prefixes: Iterable[str]) -> Callable[[str], bool]:
    """A ``keep`` for :func:`analyse_runs`: names starting with one of ``prefixes``."""
    wanted = tuple(prefixes)
    return lambda name: name.startswith(wanted)


def warm_up(spark: SparkSession) -> None:
    """Run the whole analysis once on a tiny run of three lines (a temporary directory), so
    that a session started ahead of its input (``launch --report``: during the run) has its
    Python workers forked with the analysis imported and the job's code paths compiled."""
    with tempfile.TemporaryDirectory(prefix="rmqemu-warm-up-") as tmp:
        (Path(tmp) / "events").mkdir()
        (Path(tmp) / "manifest.json").write_text(json.dumps({"run": "warm-up", "scale": 1.0, "nodes": {}}))
        lines = [{"ts": 1.0, "node": "p", "kind": "node.start", "role": "producer"},
                 {"ts": 2.0, "node": "p", "kind": "client.route", "topic": "T", "publish_queues": [["b", 0]]},
                 {"ts": 3.0, "node": "p", "kind": "send", "topic": "T", "broker": "b", "msg_id": "m", "outcome": "ok"}]
        (Path(tmp) / "events" / "p.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        analyse_runs(spark, [tmp], names(["m.", "p."]))
