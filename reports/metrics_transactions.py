"""The ``transactions`` section of ``report/metrics.json`` (docs/design.md §7 "Transactions"),
assembled from its metrics queries (:mod:`reports.core.transactions_run`); :mod:`reports.metrics`
lists it among its sections and the registry of its paths is :mod:`rmqemu.metric_transactions`."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.core.transactions import CAUSES, DISCARD_REASONS
from rmqemu.reports.results import RunMeta

#: The section's queries and the columns their rows are sorted by.
ORDER: dict[str, list[str] | None] = {
    "m.tx_totals": None, "m.tx_checks": ["checks"], "m.tx_groups": ["group", "topic"],
    "m.tx_faults": ["start_offset_ms", "fault_id"],
}
TRANSACTION_QUERIES = tuple(ORDER)
_VISIBLE = ("n", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms")


def transactions_section(run: RunMeta, r: dict[str, Any]) -> dict[str, Any]:
    """The one row of counts nested by fate, then the rows: checks per decision, the committed
    messages per consumer group, and per fault."""
    x = r["m.tx_totals"][0]
    return {
        "halves": {"sent": x["sent"], "stored": x["stored"], "stored_again": x["stored_again"]},
        "committed": {"total": x["committed"], "first_hand": x["committed_first_hand"],
                      "after_check": x["committed_after_check"], "consumed": x["committed_delivered"],
                      "lost_per_group": x["committed_lost_per_group"], "gone_per_group": x["committed_gone_per_group"]},
        "rolled_back": {"total": x["rolled_back"], "first_hand": x["rolled_back_first_hand"],
                        "after_check": x["rolled_back_after_check"], "delivered": x["rolled_back_delivered"]},
        "discarded": {"total": x["discarded"], **{k: x[f"discarded_{k}"] for k in DISCARD_REASONS},
                      "delivered": x["discarded_delivered"]},
        "open": {"total": x["open"], "delivered": x["open_delivered"]},
        "by_checks": r["m.tx_checks"],
        "visible": {k: x[f"visible_{k}"] for k in _VISIBLE},
        "duplicates": {"stored_twice": x["stored_twice"], "delivered_twice": x["delivered_twice"],
                       "by_cause": {c: x[f"cause_{c}"] for c in CAUSES}},
        "checks": {"sent": x["checks"], "no_channel": x["checks_no_channel"], "messages": x["checked_messages"]},
        "groups": r["m.tx_groups"], "faults": r["m.tx_faults"],
    }
