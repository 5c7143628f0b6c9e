"""Reading runs into Spark: every run's event logs as one table with a ``run`` column, its
readable lines, and each file's counts and bounds.

Nodes flush one JSON line at a time, so a killed node leaves at most one truncated last line:
such lines must not fail the job; they are counted per file (``bad_lines``) and dropped, as
are lines without ``ts`` (no metric can place them in time). Everything that can be wrong with
the input is a :class:`RunInputError` naming the offending path (the CLI's one-line message,
exit 2).
"""
from __future__ import annotations

import os
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from rmqemu.errors import RunInputError
from rmqemu.reports.conf import sql_conf
from rmqemu.reports.manifest import Manifest, is_uri, read_manifest
from rmqemu.reports.rundir import event_paths
from rmqemu.reports.schema import CORRUPT_COLUMN, EVENT_SCHEMA

RUN = "run"


def read_events(spark: SparkSession, paths: list[str], run: Column | None = None) -> DataFrame:
    """Parse JSON lines with the explicit schema; keep ``file`` (the file's name), a read-order
    ``seq`` and ``run`` (default 0). ``seq`` breaks ties between lines of one node with the
    same ``ts`` (a file is read in order), so "latest line at or before t" is deterministic."""
    return (spark.read.schema(EVENT_SCHEMA).option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT_COLUMN).json(paths)
            .select("*", F.col("_metadata.file_name").alias("file"),
                    (F.lit(0) if run is None else run).cast("int").alias(RUN))
            .withColumn("seq", F.monotonically_increasing_id()))


def _local_runs(spark: SparkSession, run_dirs: list[str]) -> DataFrame:
    """Local runs as ONE scan of all their files, each row's ``run`` looked up by its file's
    path (Hadoop's URI of it, made by Hadoop's own ``Path.toUri``)."""
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
    keys = F.create_map(*[x for key, run_id in run_of.items() for x in (F.lit(key), F.lit(run_id))])
    with sql_conf(spark, {"spark.sql.sources.parallelPartitionDiscovery.threshold": str(len(paths) + 1)}):
        # the files are listed already: no Spark job to list them again (Spark's is for over 32)
        return read_events(spark, paths, keys[F.col("_metadata.file_path")])


def _remote_run(spark: SparkSession, run_dir: str, run_id: int) -> DataFrame:
    base = run_dir.rstrip("/")
    paths = [base + "/events/*.jsonl", base + "/faults.jsonl"]
    try:
        return read_events(spark, paths, F.lit(run_id))
    except Exception:  # noqa: BLE001 - no faults.jsonl: each filesystem says so with its own error
        return read_events(spark, paths[:1], F.lit(run_id))


def bad() -> Column:
    """A line no metric can use: unparseable, or without ``ts``."""
    return F.col(CORRUPT_COLUMN).isNotNull() | F.col("ts").isNull()


def file_stats(raw: DataFrame) -> DataFrame:
    """Per run, file and node: good and bad line counts, the first and last ``ts`` of its good
    lines, and its first ``run.stop`` and ``run.start`` (a broken line has no node)."""
    good = ~bad()
    return raw.groupBy(RUN, "file", "node").agg(
        F.count(F.when(good, 1)).alias("good"), F.count(F.when(~good, 1)).alias("bad"),
        F.min(F.when(good, F.col("ts"))).alias("lo"), F.max(F.when(good, F.col("ts"))).alias("hi"),
        F.min(F.when(good & (F.col("kind") == "run.stop"), F.col("ts"))).alias("stop"),
        F.min(F.when(good & (F.col("kind") == "run.start"), F.col("ts"))).alias("up"))


def read_runs(spark: SparkSession, run_dirs: list[str]) -> tuple[DataFrame, list[Manifest]]:
    """``(lines, manifests)``: every run's lines as one table with a ``run`` column (the index of
    its run dir; :func:`good_events` and :func:`file_stats` read it) and each run's manifest.
    Raises :class:`RunInputError` for anything unusable found before Spark reads the lines."""
    if len(set(run_dirs)) != len(run_dirs):
        raise RunInputError("the same run directory is given twice: " + ", ".join(
            sorted({d for d in run_dirs if run_dirs.count(d) > 1})))
    manifests = [read_manifest(spark, rd) for rd in run_dirs]
    if all(not is_uri(rd) or rd.startswith("file://") for rd in run_dirs):
        return _local_runs(spark, run_dirs), manifests
    return reduce(DataFrame.unionByName, [_remote_run(spark, rd, i) for i, rd in enumerate(run_dirs)]), manifests


def good_events(raw: DataFrame) -> DataFrame:
    """The readable lines of a :func:`load_runs` table, without the corrupt-record column."""
    return raw.filter(~bad()).drop(CORRUPT_COLUMN)
