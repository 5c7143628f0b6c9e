"""The RocketMQ 5 layer in ``report/metrics.json``: the ``pop`` section (docs/design.md §7 "POP
consumption"), the ``timed`` part of the ``delays`` section and the route staleness section's totals
per view holder, assembled from their metrics queries (:mod:`reports.core.rmq5_run`,
:mod:`reports.core.staleness`); the registry of their paths is :mod:`rmqemu.metric_pop`."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.core.pop import BROKER_ACK_RESULTS, PROXY_ACK_RESULTS, VIOLATIONS
from rmqemu.reports.core.rmq5_run import POP_QUERIES, TIMER_QUERIES
from rmqemu.reports.core.staleness import HOLDERS
from rmqemu.reports.results import RunMeta

#: The queries and the columns their rows are sorted by.
ORDER: dict[str, list[str] | None] = {
    "m.pop_totals": None, "m.pop_fifo": ["group"], "m.pop_faults": ["start_offset_ms", "fault_id"],
    "m.timers": ["topic"], "m.timer_totals": None,
}
__all__ = ["ORDER", "POP_QUERIES", "TIMER_QUERIES", "by_holder", "pop_section", "timed"]


def pop_section(run: RunMeta, r: dict[str, Any]) -> dict[str, Any]:
    """The one row of counts nested by subject, then the FIFO groups' and the faults' rows."""
    x = r["m.pop_totals"][0]
    return {
        "leases": {"granted": x["leases"], "fifo": x["leases_fifo"], "from_retry": x["leases_retry"],
                   "expired": x["leases_expired"], "redelivered": x["leases_redelivered"],
                   "revive_failed": x["revive_failed"]},
        "messages": {"leased": x["messages"], "redelivered": x["messages_redelivered"], "acked": x["messages_acked"],
                     "unacked": x["messages_unacked"]},
        "attempts": {"once": x["attempts_once"], "twice": x["attempts_twice"],
                     "three_or_more": x["attempts_three_or_more"], "max": x["attempts_max"]},
        "acks": {"proxy": {"total": x["proxy_acks"], **{k: x[f"proxy_ack_{k}"] for k in PROXY_ACK_RESULTS}},
                 "broker": {"total": x["broker_acks"], **{k: x[f"broker_ack_{k}"] for k in BROKER_ACK_RESULTS},
                            "other": x["broker_ack_other"]}},
        "renewals": {"proxy": x["renewals_proxy"], "ok": x["renewals_ok"], "refused": x["renewals_refused"]},
        "dlq": {"sent": x["dlq_sent"], "failed": x["dlq_failed"]},
        "fifo": {"message_groups": x["fifo_message_groups"], "messages": x["fifo_messages"],
                 **{k: x[f"fifo_{k}"] for k in VIOLATIONS}, "groups": r["m.pop_fifo"]},
        "faults": r["m.pop_faults"],
    }


def timed(r: dict[str, Any]) -> dict[str, Any]:
    """The delays section's ``timed`` part: the totals and the rows per topic."""
    return {**r["m.timer_totals"][0], "by_topic": r["m.timers"]}


def by_holder(clients: list[dict[str, Any]]) -> dict[str, Any]:
    """The client views' staleness summed per holder (``client``, ``grpc``, ``proxy``)."""
    out = {}
    for h in HOLDERS:
        mine = [c for c in clients if (c.get("holder") or "client") == h]
        out[h] = {"views": len(mine), "stale_views": sum(1 for c in mine if c["stale_ms"] > 0),
                  "stale_ms": sum((c["stale_ms"] for c in mine), 0.0),
                  "max_ms": max([c["max_ms"] for c in mine], default=0.0)}
    return out
