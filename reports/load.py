"""Reading a run directory: event logs, broken-line accounting (the manifest: :mod:`reports.manifest`).

A run directory holds ``manifest.json``, ``events/<node>.jsonl`` and ``faults.jsonl``
(docs/design.md §1). Nodes flush one JSON line at a time, so a killed node leaves at most
one truncated last line: such lines must not fail the job, they are counted per file
(``bad_lines``) and dropped. Lines without ``ts`` are counted the same way, since no
metric can place them in time.

Everything that can be wrong with the input is reported as :class:`RunInputError` with
the offending path, so the CLI can turn it into a one-line message and exit code 2.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession, functions as F

from rmqemu.errors import RunInputError
from reports.intervals import RUN
from reports.schema import CORRUPT_COLUMN, EVENT_SCHEMA
from reports.manifest import Manifest, is_uri, read_manifest
from reports.nodes import node_table, sql_literal
from reports.session import SMALL_INPUT_BYTES

#: Width of the over-time plots' time bins: a run split into this many.
TIME_BINS = 120


@dataclass
class RunData:
    """A loaded run: good events (a filter over the cached scan), the node table and the
    run's time bounds.

    ``run_start``/``run_end`` are the first and last ``ts`` of any good event: the
    stretch of time the logs actually observed (the manifest's ``duration_s`` may be
    longer than what was logged if the run was cut short). ``stop_ms``: the launcher's
    ``run.stop`` (the shutdown begins), if logged; route views are measured up to it,
    since brokers unregister while shutting down and would make every run look stale
    at its end.
    """

    manifest: Manifest
    events: DataFrame
    nodes: DataFrame
    bad_lines: dict[str, int]
    event_count: int
    run_start: float
    run_end: float
    stop_ms: float | None = None
    up_ms: float | None = None  # the launcher's ``run.start``: every node is up
    key: str = ""  # the run dir as given
    #: the value of the ``run`` column of this run's rows: its index in the load (an int,
    #: not the run dir: every key of the analysis starts with ``run``, and hashing, sorting
    #: and comparing a path string in every row cost a 1M-event run about 5 % of its CPU)
    id: int = 0
    source: DataFrame | None = field(default=None, repr=False)  # the cached scan (release_runs)
    #: (good events, node table) of every run of the load, unfiltered (:func:`as_one`)
    loaded: tuple[DataFrame, DataFrame] | None = field(default=None, repr=False)

    @property
    def measure_end(self) -> float:
        """Where route views stop being measured: ``run.stop`` if logged, else the run end."""
        return self.run_end if self.stop_ms is None else min(self.stop_ms, self.run_end)

    @property
    def bin_ms(self) -> float:
        """Width of the time bins of the over-time plots: the run split into ``TIME_BINS``."""
        return max((self.run_end - self.run_start) / TIME_BINS, 1.0)


def event_paths(run_dir: str) -> list[str]:
    """The JSONL files of a local run: ``events/*.jsonl`` then ``faults.jsonl`` if present."""
    root = run_dir[len("file://"):] if run_dir.startswith("file://") else run_dir
    events_dir = os.path.join(root, "events")
    files = sorted(
        os.path.join(events_dir, name)
        for name in (os.listdir(events_dir) if os.path.isdir(events_dir) else [])
        if name.endswith(".jsonl")
    )
    if not files:
        raise RunInputError(f"{events_dir}: no *.jsonl event files")
    faults = os.path.join(root, "faults.jsonl")
    if os.path.exists(faults):
        files.append(faults)
    for path in files:  # Spark's own error for an unreadable file is a page of JVM trace
        try:
            with open(path, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise RunInputError(f"{path}: cannot read ({exc.strerror})") from None
    return files


def read_events(spark: SparkSession, paths: list[str], run: Callable[[F.Column], F.Column] | None = None) -> DataFrame:
    """Parse JSON lines with the explicit schema; keep ``file`` and a read-order ``seq``
    (and ``run``, ``run(file path column)``, when given: the scan's file metadata is only
    reachable here).

    ``seq`` only breaks ties between events of one node with the same ``ts`` (a file
    is read in order), so "latest event at or before t" stays deterministic.
    """
    extra = [run(F.col("_metadata.file_path")).alias(RUN)] if run is not None else []
    return (
        spark.read.schema(EVENT_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .json(paths)
        .select("*", F.col("_metadata.file_name").alias("file"), *extra)
        .withColumn("seq", F.monotonically_increasing_id())
    )


def _file_name(spelled: str) -> str:
    """A file's name as it is on disk: Spark's ``_metadata.file_name`` is percent-encoded
    (``pg 1.jsonl`` reads ``pg%201.jsonl``); ``unquote`` leaves a literal ``+`` alone."""
    return unquote(spelled)


def _bad() -> F.Column:
    """A line no metric can use: unparseable, or without ``ts``."""
    return F.col(CORRUPT_COLUMN).isNotNull() | F.col("ts").isNull()


def split_bad_lines(raw: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(good events, bad-line counts per file). ``raw`` must be cached: Spark refuses
    queries over the corrupt-record column of an uncached JSON scan."""
    good = raw.filter(~_bad()).drop(CORRUPT_COLUMN)
    counts = raw.filter(_bad()).groupBy("file").agg(F.count(F.lit(1)).alias("lines"))
    return good, counts


def file_stats(raw: DataFrame) -> DataFrame:
    """Per run and file: ``good``/``bad`` line counts and the first/last ``ts`` of its good lines.
    One small job gives the run's bounds and its broken-line accounting at once."""
    good = ~_bad()
    return raw.groupBy("run", "file").agg(
        F.count(F.when(good, 1)).alias("good"), F.count(F.when(~good, 1)).alias("bad"),
        F.min(F.when(good, F.col("ts"))).alias("lo"), F.max(F.when(good, F.col("ts"))).alias("hi"),
        F.min(F.when(good & (F.col("kind") == "run.stop"), F.col("ts"))).alias("stop"),
        F.min(F.when(good & (F.col("kind") == "run.start"), F.col("ts"))).alias("up"))


def _read_run(spark: SparkSession, run_dir: str, run_id: int) -> DataFrame:
    """The raw lines of one run (``read_events``) with its ``run`` column (``run_id``)."""
    if is_uri(run_dir) and not run_dir.startswith("file://"):
        base = run_dir.rstrip("/")
        paths = [base + "/events/*.jsonl", base + "/faults.jsonl"]
        try:
            raw = read_events(spark, paths)
        except Exception:  # no faults.jsonl
            raw = read_events(spark, paths[:1])
    else:
        raw = read_events(spark, event_paths(run_dir))
    # Not a plain literal: Spark turns a repartition by a constant into a single partition,
    # which no window, group-by or join keyed by ``run`` recognises as "partitioned by run"
    # as soon as the other side of a join is (a run's rows are in one partition either way).
    return raw.withColumn(RUN, F.lit(run_id) + F.length(F.substring(F.col("file"), 1, 0)))


def _read_local_runs(spark: SparkSession, run_dirs: list[str]) -> DataFrame:
    """The raw lines of local runs (``read_events``) as ONE scan of all their files, each
    row's ``run`` (the index of its run dir) looked up by the row's file.

    (One run is read by :func:`_read_run`: no lookup on every row of a large run.)

    Why one scan and not a union of one per run: every later DataFrame's plan holds its
    scans, and Spark's analysis renews a plan's duplicated relations for each of them:
    with 20 runs that renewing was a third of the driver's time, and the union's 20 scans
    made as many tasks. The file path Spark gives a row is the Hadoop URI of the file
    (``file:`` and the percent-encoded path), so the lookup keys are made by Hadoop's own
    ``Path.toUri``."""
    to_uri = spark.sparkContext._jvm.org.apache.hadoop.fs.Path
    run_of: dict[str, int] = {}
    paths = []
    for run_id, run_dir in enumerate(run_dirs):
        for path in event_paths(run_dir):
            paths.append(path)
            key = "file:" + to_uri(os.path.abspath(path.removeprefix("file://"))).toUri().toString()
            if key in run_of:
                raise RunInputError(f"{path}: read for two run directories ({run_dirs[run_of[key]]} and {run_dir}); "
                                    "give each run directory once")
            run_of[key] = run_id
    keys = F.expr("map(" + ", ".join(f"{sql_literal(key)}, {run_id}" for key, run_id in run_of.items()) + ")")
    return read_events(spark, paths, lambda file_path: keys[file_path])


def _small(run_dirs: list[str]) -> bool:
    """Whether the runs are local and their logs together small (``SMALL_INPUT_BYTES``, the
    threshold of the CLI's small-input session): partitioning by run pays there."""
    total = 0
    for run_dir in run_dirs:
        if is_uri(run_dir) and not run_dir.startswith("file://"):
            return False
        total += sum(os.path.getsize(p) for p in event_paths(run_dir))
    return total < SMALL_INPUT_BYTES


def load_runs(spark: SparkSession, run_dirs: list[str]) -> list[RunData]:
    """Read several run directories as one table with a ``run`` column (the index of the
    run dir in ``run_dirs``), cached once; raise :class:`RunInputError` for anything unusable.

    Why one table: the scan (one scan of every file when several runs are local,
    :func:`_read_local_runs`), the cache and the bounds/broken-line statistics are one job
    for all the runs, whatever their number; each run's ``events`` is a filter of the
    cached table on ``run`` (the in-memory cache skips the other runs' batches by their
    min/max statistics). Why hash-partitioned by ``run`` before the cache: every window,
    group-by and join of the analysis has ``run`` among its keys (:mod:`reports.intervals`),
    which that partitioning satisfies, so they need no shuffle of their own (the one
    exchange is here, once). Only for a small input (:func:`_small`): a run is then one
    partition, which on a large run would leave every core but one idle for every operator
    of the analysis; a large input keeps the scan's partitions and Spark shuffles by each
    operator's keys instead (a 1M-event run then costs the CPU it costs without the keying,
    bench/README.md).
    :func:`reports.runs.as_one` makes all the runs one analysis input."""
    if len(set(run_dirs)) != len(run_dirs):
        raise RunInputError("the same run directory is given twice: " + ", ".join(
            sorted({d for d in run_dirs if run_dirs.count(d) > 1})))
    manifests = [read_manifest(spark, rd) for rd in run_dirs]
    if len(run_dirs) > 1 and all(not is_uri(rd) or rd.startswith("file://") for rd in run_dirs):
        raw = _read_local_runs(spark, run_dirs)
    else:
        raw = reduce(DataFrame.unionByName, [_read_run(spark, rd, i) for i, rd in enumerate(run_dirs)])
    if _small(run_dirs):
        # sorted by kind, the cache's batches (10,000 rows) mostly hold one kind each, and a
        # transform's filter on kind skips the others by their statistics: 20 runs' report
        # 17 s against 19 s unsorted (bench/README.md)
        raw = raw.repartition(RUN).sortWithinPartitions("kind")
    raw = raw.cache()  # kept: the good events are read from it (released by release_runs)
    stats = file_stats(raw).collect()
    lost = [_file_name(r["file"]) for r in stats if r["run"] is None]
    if lost:  # the lookup of _read_local_runs missed: a path Spark spells unlike Hadoop's Path
        raise RunInputError(f"{', '.join(sorted(lost))}: read, but not matched to any of the run directories "
                            f"{', '.join(run_dirs)} (please report this with the paths)")
    good, _ = split_bad_lines(raw)
    # lazily: computed (once) by the first analysis job that reads it
    source = node_table(spark, dict(enumerate(manifests)), good)
    nodes = source.localCheckpoint(eager=False)
    # Keep the source plan alive as long as the cut: its SQL metrics are accumulators the JVM
    # holds weakly, and the job that computes the cut updates them (Spark logs "non-existent
    # accumulator" errors if the plan was collected by then, as free_proxies makes likely)
    nodes._rmqemu_source = source  # type: ignore[attr-defined]
    loaded = (good, nodes)
    runs = []
    for run_id, (run_dir, manifest) in enumerate(zip(run_dirs, manifests)):
        mine = [r for r in stats if r["run"] == run_id]
        n = sum(r["good"] for r in mine)
        if not n:
            raise RunInputError(f"{run_dir.rstrip('/')}/events: no readable events")
        mine_only = F.col(RUN) == run_id
        runs.append(RunData(
            manifest=manifest,
            events=good.filter(mine_only),
            nodes=nodes.filter(mine_only),
            bad_lines={_file_name(r["file"]): int(r["bad"]) for r in mine if r["bad"]},
            event_count=int(n),
            run_start=float(min(r["lo"] for r in mine if r["lo"] is not None)),
            run_end=float(max(r["hi"] for r in mine if r["hi"] is not None)),
            stop_ms=min((float(r["stop"]) for r in mine if r["stop"] is not None), default=None),
            up_ms=min((float(r["up"]) for r in mine if r["up"] is not None), default=None),
            key=run_dir,
            id=run_id,
            source=raw,
            loaded=loaded,
        ))
    return runs


def release_runs(runs: list[RunData]) -> None:
    """Drop the cached events of ``runs`` (:func:`load_runs` caches them once for all).

    Why: a warm session (the pytest plugin's, a notebook) analyses run after run; every
    cached table it keeps costs memory, and every later query's analysis looks for reuse
    among all cached plans, so each call would pay for all the earlier ones. Call it only
    when nothing will read the runs' DataFrames again."""
    for source in {id(r.source): r.source for r in runs if r.source is not None}.values():
        source.unpersist()


def load_run(spark: SparkSession, run_dir: str) -> RunData:
    """Read a run directory; raise :class:`RunInputError` for anything unusable."""
    return load_runs(spark, [run_dir])[0]
