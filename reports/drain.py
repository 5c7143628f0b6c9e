"""metrics.json ``drain``: whether the end-of-run drain completed (docs/design.md §6, §7).

The launcher writes one ``run.drain`` line in ``faults.jsonl`` after ``run.stop``: it stopped
the producers, then waited (bounded) until every consumer group had consumed up to each master's
max offset. A ``consumption.lost`` of a run whose drain completed is a real loss; with a drain
that did not complete, the messages of ``lag_left`` may only have been left unread. The figures
are the launcher's own, copied: nothing is recomputed here.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, functions as F

COLUMNS = ("completed", "waited_ms", "timeout_ms", "lag_total", "lag_left", "unreadable", "interrupted")


def query(events: DataFrame) -> DataFrame:
    """Each run's ``run.drain`` lines (one, normally), with ``run`` and ``ts``."""
    return events.filter(F.col("kind") == "run.drain").select("run", "ts", *COLUMNS)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The last ``run.drain`` as metrics.json's ``drain``; every value null when the run has none
    (an older run, or one interrupted or broken before its shutdown), so that an ``expect:`` on
    ``drain.completed`` is still a valid path."""
    if not rows:
        return {"completed": None, "waited_ms": None, "waited_cluster_s": None, "timeout_ms": None,
                "timeout_cluster_s": None, "lag_total": None, "lag_left": [], "unreadable": [],
                "interrupted": False}
    last = max(rows, key=lambda r: r["ts"])
    out = {k: last.get(k) for k in COLUMNS}
    out["lag_left"] = [{k: v for k, v in lag.items() if v is not None} for lag in out["lag_left"] or []]
    out["unreadable"] = list(out["unreadable"] or [])
    out["interrupted"] = bool(out["interrupted"])
    return out
