"""The Spark engine: the runs' events read once, the core (:mod:`reports.core.analysis`) run
in Spark tasks keyed by run and node, in ONE Spark job whatever the number of runs:

1. every run's truth, one task per run (:func:`reports.core.analysis.run_truth`): its few
   lifecycle, fault, topic and route lines, and its files' line counts and bounds (the run's
   numbers, its broken lines);
2. every share's part (:func:`~reports.core.analysis.node_part`): a share is a run's nodes
   together when its logs are under :data:`SHARE_BYTES`, else one of its nodes; its lines with
   its run's truth (a cogroup on ``(run, share)``: the truth task hands a copy to each share
   of its run);
3. every run's metrics, plot and derived tables, one task per run
   (:func:`~reports.core.analysis.combine`), collected.

A 1M-event run is cut across tasks by node, a sweep by run; one run and N runs are the same
code. Between tasks the tables travel as pickled pandas frames in a binary column: Spark moves
them, it does not look inside.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from rmqemu.errors import RunInputError
from rmqemu.reports.conf import sql_conf
from rmqemu.reports.core.analysis import (
    NODE_COLUMNS,
    NODE_KINDS,
    TRUTH_COLUMNS,
    TRUTH_KINDS,
    combine,
    concat,
    node_part,
    run_truth,
)
from rmqemu.reports.core.frame import RunInfo, from_json_columns, to_frame
from rmqemu.reports.core.schema import EVENTS
from rmqemu.reports.load import RUN, file_stats, good_events, read_runs
from rmqemu.reports.manifest import Manifest, is_uri
from rmqemu.reports.results import RunMeta, RunResult, write_tables
from rmqemu.reports.rundir import event_paths

#: What the tasks return: pickled values of a run (``name``: what they are), by share (null:
#: the run's own).
BLOB = "run int, share string, name string, data binary"
_BLOB = pa.schema([("run", pa.int32()), ("share", pa.string()), ("name", pa.string()), ("data", pa.binary())])

#: A run whose logs are smaller is analysed in one task, its nodes together: on a small run a
#: call per node costs more in pandas' per-call overhead than the tasks gain (bench/README.md).
SHARE_BYTES = 16 * 1024 * 1024
#: The share of a run analysed whole.
WHOLE = ""

#: Names of the values that are not tables of the analysis (DONE: the run's last task finished).
META, TRUTH, DONE = "meta", "truth", "done"


def _blobs(run: int | None, rows: Iterable[tuple[str | None, str, bytes]]) -> pa.Table:
    rows = list(rows)
    return pa.table({"run": [run] * len(rows), "share": [r[0] for r in rows], "name": [r[1] for r in rows],
                     "data": [r[2] for r in rows]}, schema=_BLOB)


def _dump(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def wire_columns(columns: Iterable[str]) -> list[Column]:
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


def _truth_task(manifests: Mapping[int, Manifest], whole: Collection[int]) -> Callable[[pa.Table, pa.Table], pa.Table]:
    def task(lines: pa.Table, stats: pa.Table) -> pa.Table:
        run = (lines if len(lines) else stats).column(RUN)[0].as_py()
        st = stats.to_pandas().rename(columns={"file_name": "file", "node_name": "node"})
        if run is None:  # files the read could not match to a run dir
            return _blobs(None, [(None, "unmatched", _dump(sorted(set(st["file"]))))])
        info, meta = _meta(run, st, manifests[run])
        if info is None:
            return _blobs(run, [(None, META, _dump(meta))])
        truth = _dump((run_truth(_events(lines), info, manifests[run].nodes), info))
        shares = [WHOLE] if run in whole else sorted(set(st.loc[st["good"] > 0, "node"].dropna()))
        return _blobs(run, [(None, META, _dump(meta)), (None, TRUTH, truth), *((n, TRUTH, truth) for n in shares)])
    return task


def _share_task(queries: Collection[str] | None) -> Callable[[pa.Table, pa.Table], pa.Table]:
    return lambda lines, given: _share_part(lines, given, queries)


def _share_part(lines: pa.Table, given: pa.Table, queries: Collection[str] | None) -> pa.Table:
    """A share's part; the run's own rows (meta, truth: ``share`` null) pass through."""
    run = given.column(RUN)[0].as_py()
    rows = given.to_pylist()
    if rows[0]["share"] is None:
        return _blobs(run, [(None, r["name"], r["data"]) for r in rows])
    if not len(lines):
        return _blobs(run, [])
    truth, info = pickle.loads(rows[0]["data"])
    ev = _events(lines.drop_columns(["share"]))
    return _blobs(run, [(rows[0]["share"], "part", _dump(node_part(ev, truth, info, queries)))])


def _combine_task(keep: Callable[[str], bool], plots_too: bool, queries: Collection[str] | None,
                  tables_to: Mapping[int, str]) -> Callable[[pa.Table], pa.Table]:
    def task(table: pa.Table) -> pa.Table:
        run = table.column(RUN)[0].as_py()
        rows = table.to_pylist()
        by_name = {r["name"]: r["data"] for r in rows if r["share"] is None}
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


def _whole_runs(run_dirs: list[str], share_bytes: int) -> set[int]:
    """The runs analysed in one share: local ones with less than ``share_bytes`` of logs (a
    run elsewhere, in HDFS say, is cut by node)."""
    def size(run_dir: str) -> float:
        if is_uri(run_dir) and not run_dir.startswith("file://"):
            return math.inf
        return sum(os.path.getsize(p) for p in event_paths(run_dir))
    return {i for i, run_dir in enumerate(run_dirs) if size(run_dir) < share_bytes}


def _job_conf(spark: SparkSession, groups: int) -> dict[str, str]:
    """The SQL settings of this job. Shuffle partitions: one per group, at most a few per core
    (Spark's default of 200 makes a tiny report thousands of empty tasks on a cluster). Kept
    as they are: adaptive execution would merge partitions of few bytes into one task, and a
    group's few bytes are a run's or a node's whole analysis (bench/README.md)."""
    return {"spark.sql.shuffle.partitions": str(max(1, min(groups, 2 * max(spark.sparkContext.defaultParallelism, 1)))),
            "spark.sql.adaptive.coalescePartitions.enabled": "false"}


def analyse_runs(spark: SparkSession, run_dirs: list[str], keep: Callable[[str], bool] = lambda name: True,
                 progress: Callable[[str], None] = lambda message: None,
                 queries: Collection[str] | None = None, tables_to: list[str] | None = None,
                 share_bytes: int = SHARE_BYTES) -> list[RunResult]:
    """Every run of ``run_dirs`` analysed in one Spark job: its :class:`RunResult` with the tables
    whose name ``keep`` accepts (``m.*`` metrics queries, ``p.*`` plot tables, the derived
    tables); ``queries``: only these metrics queries, and only the work they need;
    ``tables_to``: per run, the directory its task writes the derived tables to as Parquet
    (:func:`reports.results.write_tables`; the executors must reach it); ``share_bytes``: a
    run with fewer bytes of logs is analysed in one share (0: every run node by node). Raises
    :class:`rmqemu.errors.RunInputError` for unusable input."""
    progress(f"reading {', '.join(run_dirs)} (manifest, events/*.jsonl, faults.jsonl)")
    raw, manifests = read_runs(spark, list(run_dirs))
    events = good_events(raw)
    # renamed: under their own names, Spark 4.3 handed the cogroup's task this aggregate
    # without its file and node columns
    stats = file_stats(raw).select(RUN, F.col("file").alias("file_name"), F.col("node").alias("node_name"),
                                   "good", "bad", "lo", "hi", "stop", "up")
    plots_too = keep("p.lanes")
    whole = _whole_runs(run_dirs, share_bytes)
    truth = (events.filter(F.col("kind").isin(*TRUTH_KINDS)).select(RUN, *wire_columns(TRUTH_COLUMNS)).groupBy(RUN)
             .cogroup(stats.groupBy(RUN)).applyInArrow(_truth_task(dict(enumerate(manifests)), whole), BLOB))
    share = F.when(F.col(RUN).isin(*whole), F.lit(WHOLE)).otherwise(F.col("node")) if whole else F.col("node")
    parts = (events.filter(F.col("kind").isin(*NODE_KINDS) & F.col("node").isNotNull())
             .select(RUN, share.alias("share"), *wire_columns(NODE_COLUMNS)).groupBy(RUN, "share")
             .cogroup(truth.groupBy(RUN, "share")).applyInArrow(_share_task(queries), BLOB))
    job = parts.groupBy(RUN).applyInArrow(
        _combine_task(keep, plots_too, queries, dict(enumerate(tables_to or []))), BLOB)
    progress("analysing: truth per run, then views, staleness and sends (a small run whole, a large one "
             "node by node), then each run's metrics")
    groups = sum(1 if i in whole else len(m.nodes) or 1 for i, m in enumerate(manifests))
    with sql_conf(spark, _job_conf(spark, groups)):
        got = job.collect()
    return _results(run_dirs, manifests, got)


def _results(run_dirs: list[str], manifests: list[Manifest], got: list[Any]) -> list[RunResult]:
    tables: dict[int, dict[str, Any]] = {}
    for r in got:
        if r["run"] is None:
            raise RunInputError(f"{', '.join(pickle.loads(r['data']))}: read, but not matched to any of the run "
                                f"directories {', '.join(run_dirs)} (please report this with the paths)")
        tables.setdefault(r["run"], {})[r["name"]] = pickle.loads(r["data"])
    out = []
    for run_id, (run_dir, manifest) in enumerate(zip(run_dirs, manifests, strict=True)):
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
