"""The vocabulary of the metrics.json registry (:mod:`rmqemu.metric_paths`): the units a path
can have, what one path is (:class:`Metric`) and the names some paths are built from."""

from __future__ import annotations

from dataclasses import dataclass

#: The misrouting reasons, first match wins (the report's ``reports.core.sends.REASONS``; a test
#: keeps the two equal).
REASONS: tuple[str, ...] = ("dead", "paused", "partitioned", "stale_master", "not_master", "no_topic", "bad_queue")
#: The scopes of the send latency: every attempt, and the ok ones only.
LATENCY_SCOPES: tuple[str, ...] = ("all", "ok")

MS, COUNT, BOOL, TEXT, NUMBER, LIST, TABLE, GROUP = (
    "wall ms", "count", "true/false", "text", "number", "list of names", "table", "group")


@dataclass(frozen=True)
class Metric:
    """One path: ``unit`` is one of the constants above; ``what`` one line for a person."""

    path: str
    unit: str
    what: str
    section: str = ""

    @property
    def twin(self) -> str | None:
        """The ``_cluster_s`` twin of a wall-ms duration (None for anything else)."""
        return self.path[:-3] + "_cluster_s" if self.unit == MS and self.path.endswith("_ms") else None

    @property
    def is_value(self) -> bool:
        """Whether an expectation may name it: one value, not a group, a table or a table's column."""
        return self.unit not in (TABLE, GROUP, LIST, TEXT) and "[]" not in self.path
