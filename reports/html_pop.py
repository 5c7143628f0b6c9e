"""report.html's tables of the RocketMQ 5 layer: the POP section (docs/design.md §7 "POP
consumption"), the timed messages of the delays section and the labels of the route views a proxy
or a gRPC client holds. Plain rows from metrics.json, laid out by :func:`reports.html.table` (each
dict here is its keyword arguments). The POP tables are there only when the run leased a message."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.summary import Metrics, fmt_ms, fmt_num

_FAULT_COUNTS = ("leases", "expired", "redelivered", "proxy_refused", "broker_refused", "dlq", "out_of_order",
                 "unacked_previous")
_TIMED = ("sent", "parked", "on_time", "late", "early", "pending", "immediate", "redelivered")
_LATENESS = ("lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms")


def holder_label(row: dict[str, Any], who: str) -> str:
    """A staleness row's view holder as the page names it: a proxy's own route, a gRPC client's
    (through which proxy), or a client's bare name."""
    holder = row.get("holder")
    if holder == "proxy":
        return f"{row[who]} (proxy)"
    if holder == "grpc":
        return f"{row[who]} (gRPC, via {row.get('via') or '?'})"
    return str(row[who])


def timed_table(m: Metrics) -> list[dict[str, Any]]:
    """The timed messages per topic, next to the delay levels' table."""
    scale, t = m["scale"], (m.get("delays") or {}).get("timed")
    if not t:
        return []
    return [{"headers": ["topic", "sent", "parked", "on time", "late", "early", "still parked", "at once",
                         "delivered again", "lateness p50", "p99", "max"],
             "rows": ([x["topic"], *[fmt_num(x[k]) for k in _TIMED], *[fmt_ms(x[k], scale) for k in _LATENESS]]
                      for x in t["by_topic"]),
             "numeric": [False] + [True] * 11, "empty": "No timed message (RocketMQ 5 delivery instant) was sent.",
             "title": "Timed messages per topic",
             "caption": "Each entry a master held on its timer wheel, against the instant its producer asked for, in "
                        "true time: on time up to the end of its wheel slot plus the tolerance; early (must be 0 "
                        "unless a clock was set) before the instant. Still parked: not delivered by the end of the "
                        "run; at once: its slot had passed when the wheel read it (a restart's backlog)."}]


def pop_tables(m: Metrics) -> list[dict[str, Any]]:
    """Leases and acks, delivery attempts, the FIFO groups' order and what each fault's window held."""
    x, scale = m.get("pop") or {}, m["scale"]
    if not x or not x["leases"]["granted"]:
        return []
    le, ms, at, pa, ba = x["leases"], x["messages"], x["attempts"], x["acks"]["proxy"], x["acks"]["broker"]
    refused = [k for k in ba if k not in ("total", "ok") and ba[k]]
    return [
        {"headers": ["leases", "FIFO", "from a retry topic", "expired and put back", "redelivered (attempt > 1)",
                     "messages", "redelivered", "acked", "never acked", "needed 1", "2", "3+", "max attempt"],
         "rows": [[fmt_num(v) for v in (le["granted"], le["fifo"], le["from_retry"], le["expired"], le["redelivered"],
                                        ms["leased"], ms["redelivered"], ms["acked"], ms["unacked"], at["once"],
                                        at["twice"], at["three_or_more"], at["max"])]],
         "numeric": [True] * 13, "title": "POP consumption",
         "caption": f"Leases (pop.lease) a master handed out, per (group, message). Acks a proxy answered: "
                    f"{fmt_num(pa['total'])}, {fmt_num(pa['ok'])} ok, {fmt_num(pa['expired'])} refused as expired "
                    f"and {fmt_num(pa['invalid'])} as invalid (INVALID_RECEIPT_HANDLE), {fmt_num(pa['no_broker'])} "
                    f"without a broker, {fmt_num(pa['timeout'])} timed out, {fmt_num(pa['refused'])} refused by the "
                    f"broker. Acks a broker answered: {fmt_num(ba['total'])}, {fmt_num(ba['ok'])} ok"
                    + "".join(f", {fmt_num(ba[k])} {k}" for k in refused)
                    + f". Renewals: {fmt_num(x['renewals']['ok'])} granted, {fmt_num(x['renewals']['refused'])} "
                      f"refused. Sent to a DLQ by a proxy: {fmt_num(x['dlq']['sent'])} "
                      f"({fmt_num(x['dlq']['failed'])} failed)."},
        {"headers": ["group", "message groups", "messages", "out of send order", "leased while the previous was "
                                                                                "un-acked"],
         "rows": ([g["group"], *[fmt_num(g[k]) for k in ("message_groups", "messages", "out_of_order",
                                                         "unacked_previous")]] for g in x["fifo"]["groups"]),
         "numeric": [False, True, True, True, True], "empty": "No FIFO group leased a message sent with a group.",
         "title": "FIFO groups' order",
         "caption": "Per message group (the send's message group), in send order: both columns must be 0."},
        {"headers": ["fault", "kind", "starts after", "window ends after", "leases", "expired", "redelivered",
                     "refused by a proxy", "refused by a broker", "to a DLQ", "out of order", "previous un-acked"],
         "rows": ([f["fault_id"], f["fault"], fmt_ms(f["start_offset_ms"], scale),
                   fmt_ms(f["impact_end_offset_ms"], scale), *[fmt_num(f[k]) for k in _FAULT_COUNTS]]
                  for f in x["faults"]),
         "numeric": [False, False] + [True] * 10, "empty": "No faults were injected in this run.",
         "title": "POP consumption per fault", "caption": "The brokers' and proxies' lines in each fault's attribution "
                                                          "window."},
    ]
