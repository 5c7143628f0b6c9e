"""report.html's tables of delayed messages and retries (docs/design.md §7 "Delays and
retries"): plain rows from metrics.json, laid out by :func:`reports.html.table` (each dict here
is its keyword arguments)."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.summary import Metrics, fmt_ms, fmt_num

_COUNTS = ("sent", "parked", "on_time", "late", "early", "pending", "overdue", "redelivered")
_LATENESS = ("lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms")


def delay_tables(m: Metrics) -> list[dict[str, Any]]:
    """The delayed messages per topic, the retries by reconsumeTimes and the DLQ."""
    scale, d, r = m["scale"], m["delays"], m["retries"]
    return [
        {"headers": ["topic", "sent", "parked", "on time", "late", "early", "pending", "of them overdue",
                     "delivered again", "lateness p50", "p99", "max"],
         "rows": ([x["topic"], *[fmt_num(x[k]) for k in _COUNTS], *[fmt_ms(x[k], scale) for k in _LATENESS]]
                  for x in d["by_topic"]),
         "numeric": [False] + [True] * 11, "empty": "No message was sent with a delay level or retried.",
         "title": "Delayed messages per topic",
         "caption": f"Each message a master parked in SCHEDULE_TOPIC_XXXX (a delay level, or a retry's wait on its "
                    f"%RETRY% topic) against its due time, in true time: on time within "
                    f"{fmt_ms(d['tolerance_ms'], scale)} either way. Pending: never delivered (the end-of-run "
                    f"drain does not wait for them); overdue: due before the run stopped."},
        {"headers": ["group", "topic", "reconsumeTimes", "to %RETRY%", "to %DLQ%", "dropped"],
         "rows": ([x["group"], x["topic"], fmt_num(x["reconsume_times"]),
                   *[fmt_num(x[k]) for k in ("retried", "dead_lettered", "dropped")]] for x in r["by_reconsume_times"]),
         "numeric": [False, False, True, True, True, True], "empty": "No consumer failed a message.",
         "title": "Retries by reconsumeTimes",
         "caption": f"Messages taken back from consumers: {fmt_num(r['taken_back'])}, "
                    f"{fmt_num(r['dead_lettered'])} distinct message(s) parked in a DLQ; "
                    f"{fmt_num(r['deliveries'])} deliveries of retry copies."},
    ]
