"""The ``delays`` and ``retries`` sections of ``report/metrics.json`` (docs/metrics.md, "Delays and
retries"), assembled from their metrics queries (:mod:`reports.core.delays`,
:mod:`reports.core.retries`); :mod:`reports.metrics` lists them among its sections."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.core import delays
from rmqemu.reports.results import RunMeta

#: The queries of the two sections and the columns their rows are sorted by.
ORDER: dict[str, list[str] | None] = {
    "m.delays": ["topic"], "m.delay_totals": None, "m.retries": ["group", "topic", "reconsume_times"],
    "m.dlq": ["group", "topic"], "m.retry_totals": None,
}
DELAY_QUERIES = ("m.delays", "m.delay_totals")
RETRY_QUERIES = ("m.retries", "m.dlq", "m.retry_totals")


def delay_section(run: RunMeta, r: dict[str, Any]) -> dict[str, Any]:
    """Every delayed message by status, the tolerance (in wall ms: it is fixed in cluster ms)
    and the rows per topic."""
    return {"tolerance_ms": delays.TOLERANCE_MS * run.manifest.scale, **r["m.delay_totals"][0],
            "by_topic": r["m.delays"]}


def retry_section(run: RunMeta, r: dict[str, Any]) -> dict[str, Any]:
    """The messages taken back, by reconsumeTimes, and those in the DLQ."""
    return {**r["m.retry_totals"][0], "by_reconsume_times": r["m.retries"], "dlq": r["m.dlq"]}
