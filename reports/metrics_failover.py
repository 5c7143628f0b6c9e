"""The ``failover`` section of ``report/metrics.json`` (docs/design.md §7 "DLedger failovers"),
assembled from its metrics queries (:mod:`reports.core.failover_run`); :mod:`reports.metrics`
lists it among its sections and the registry of its paths is :mod:`rmqemu.metric_failover`."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.core.failover_sends import GOT
from rmqemu.reports.results import RunMeta

#: The section's queries and the columns their rows are sorted by.
ORDER: dict[str, list[str] | None] = {
    "m.failover_groups": ["group"], "m.failover_faults": ["group", "start_offset_ms", "fault_id"],
    "m.failover_failovers": ["group", "elected_offset_ms", "term"],
    "m.failover_views": ["group", "term", "who", "node"],
    "m.failover_rto": ["group", "term", "producer"], "m.failover_stale_sends": ["group", "term", "got"],
    "m.failover_lost": ["group", "consumer_group", "topic", "msg_id"],
}
FAILOVER_QUERIES = tuple(ORDER)


def _max(rows: list[dict[str, Any]], col: str) -> float:
    return max([r[col] for r in rows if r[col] is not None], default=0.0)


def failover_section(run: RunMeta, r: dict[str, Any]) -> dict[str, Any]:
    """Totals over the DLedger groups, then the rows: groups, faults that hit them, failovers
    (``changes``: one per change of leader), route views, producers' recoveries, sends to an old
    master and lost messages."""
    groups, fo, views = r["m.failover_groups"], r["m.failover_failovers"], r["m.failover_views"]
    rto, stale = r["m.failover_rto"], r["m.failover_stale_sends"]

    def total(col: str) -> int:
        return sum(g[col] for g in groups)
    return {
        "elections": total("elections"), "failovers": total("failovers"),
        "max_election_ms": _max(fo, "election_ms"), "max_no_master_ms": _max(fo, "no_master_ms"),
        "no_master_ms": sum((g["no_master_ms"] for g in groups), 0.0),
        "max_namesrv_stale_ms": _max([v for v in views if v["who"] == "namesrv"], "stale_ms"),
        "max_client_stale_ms": _max([v for v in views if v["who"] == "client"], "stale_ms"),
        "unseen_views": sum(1 for v in views if v["seen_offset_ms"] is None),
        "max_rto_ms": _max(rto, "rto_ms"),
        "acked_lost": total("acked_lost"), "duplicates": total("duplicates"), "reconsumed": total("reconsumed"),
        "truncated": total("truncated"),
        "stale_master_sends": {"total": sum(s["sends"] for s in stale),
                               "by_got": {g: sum(s["sends"] for s in stale if s["got"] == g) for g in GOT},
                               "by_failover": stale},
        "groups": groups, "faults": r["m.failover_faults"], "changes": fo, "views": views, "rto": rto,
        "lost": r["m.failover_lost"],
    }
