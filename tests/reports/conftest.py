"""The Spark tests run on the plugin's ``rmqemu_spark``: one local SparkSession per pytest worker
(xdist runs each worker in its own process, so "session" scope means one JVM per worker, started
lazily by the first Spark test). One fixture, so a worker that runs both report tests and a
cluster test's ``metrics()`` never holds two sessions of one JVM (stopping one broke the other)."""
from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(rmqemu_spark: Any) -> Any:
    return rmqemu_spark
