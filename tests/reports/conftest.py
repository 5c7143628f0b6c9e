"""One local SparkSession per pytest worker (xdist runs each worker in its own process,
so "session" scope means one JVM per worker, started lazily by the first Spark test)."""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator["pyspark.sql.SparkSession"]:  # noqa: F821
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("rmqemu-reports-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.adaptive.enabled", "false")
               # Tiny inputs: compiling generated code costs more than it saves.
               .config("spark.sql.codegen.wholeStage", "false")
               .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
               # As the CLI's small-input session (reports.cli.SMALL_INPUT_CONF): no
               # broadcast joins, each would be a Spark job of its own.
               .config("spark.sql.autoBroadcastJoinThreshold", "-1")
               .config("spark.sql.optimizer.disableHints", "true")
               .config("spark.ui.showConsoleProgress", "false")
               # Short-lived test JVMs: the C1 compiler warms up far sooner than C2.
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.session.timeZone", "UTC")
               # Call-site capture for error messages: a dozen py4j calls per F.col.
               .config("spark.python.sql.dataFrameDebugging.enabled", "false")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    from reports.cli import stop_session
    stop_session(session)
