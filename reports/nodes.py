"""The run's node table: one row per run and node (role, broker, group, auto-create), from
the manifests first and the events' ``node.start`` for nodes a manifest lacks.

Built as SQL over an inline ``VALUES`` table rather than ``createDataFrame`` (see
:func:`manifest_nodes`), keyed and hash-partitioned by ``run`` like the events
(:mod:`reports.load` reads both).
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession, functions as F

from reports.intervals import RUN
from reports.manifest import Manifest
from reports.schema import NODE_SCHEMA


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for a manifest value (string, whole number, bool or None)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def manifest_nodes(spark: SparkSession, manifests: dict[int, Manifest]) -> DataFrame:
    """The manifests' nodes as one local table (``run``, the run id the manifest is keyed
    by, and ``NODE_SCHEMA``).

    Why SQL ``VALUES`` and not ``createDataFrame``: an inline table is a local relation
    built by the parser, while ``createDataFrame`` ships pickled rows through an RDD,
    which costs a job and seconds of JVM warm-up on every report. One statement for all
    the runs: a union of one per run would be as many relations in every later plan."""
    rows = []
    for run, manifest in manifests.items():
        for name, info in manifest.nodes.items():
            bid = info.get("broker_id")
            auto = info.get("autoCreateTopicEnable")
            rows.append((
                int(run), name, info.get("role"), info.get("broker"),
                int(bid) if isinstance(bid, (int, float)) and not isinstance(bid, bool) else None,
                info.get("group"), auto if isinstance(auto, bool) else None,
            ))
    cols = f"CAST(col1 AS INT) AS {RUN}, " + ", ".join(
        f"CAST(col{i + 2} AS {f.dataType.simpleString()}) AS {f.name}" for i, f in enumerate(NODE_SCHEMA.fields))
    if not rows:
        return spark.sql(f"SELECT {cols} FROM VALUES ({', '.join(['NULL'] * (len(NODE_SCHEMA.fields) + 1))}) WHERE false")
    values = ", ".join("(" + ", ".join(sql_literal(v) for v in r) + ")" for r in rows)
    return spark.sql(f"SELECT {cols} FROM VALUES {values}")


def node_table(spark: SparkSession, manifests: dict[int, Manifest], events: DataFrame) -> DataFrame:
    """One row per run and node: role, broker name/id, client group, auto-create flag
    (``manifests``: run id -> manifest; ``events`` of those runs).

    The manifest is the primary source; ``node.start`` events fill in nodes the manifest
    lacks (or a manifest without ``nodes``), so hand-made logs need not repeat themselves.
    Hash-partitioned by ``run`` like the events, so the analysis joins it without a shuffle.
    """
    from_manifest = manifest_nodes(spark, manifests)
    from_events = (
        events.filter(F.col("kind") == "node.start")
        .groupBy(RUN, "node")
        .agg(F.first("role", ignorenulls=True).alias("role"),
             F.first("broker", ignorenulls=True).alias("broker"),
             F.first("broker_id", ignorenulls=True).alias("broker_id"),
             F.first("group", ignorenulls=True).alias("group"))
        .join(from_manifest.select(RUN, "node"), [RUN, "node"], "left_anti")
        .withColumn("auto_create", F.lit(None).cast("boolean"))
    )
    return from_manifest.unionByName(from_events).repartition(RUN)
