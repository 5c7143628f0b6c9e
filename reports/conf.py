"""One job's Spark SQL settings, applied for the job only: the session is the caller's (built
once at the entry point and passed in), so a job that needs a setting restores it after."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


@contextmanager
def sql_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` applied to the session's SQL configuration for the block, then restored:
    one job's needs without changing the session the caller passed in."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
