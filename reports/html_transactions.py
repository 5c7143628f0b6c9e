"""report.html's tables of transactional messages (docs/design.md §7 "Transactions"): plain rows
from metrics.json, laid out by :func:`reports.html.table` (each dict here is its keyword arguments).
The fates' table is always there (its delivered column holds the violations: a message delivered
without a commit); the rest only when the run stored or committed a transactional message."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.summary import Metrics, fmt_ms, fmt_num

_CAUSES = {"first_hand_and_check": "the producer's end and a check's answer", "checks_only": "two checks' answers",
           "first_hand_only": "two of the producer's ends"}
_FAULT_COUNTS = ("messages", "committed", "rolled_back", "after_check", "discarded", "open", "stored_twice",
                 "rolled_back_delivered", "checks", "checks_no_channel")


def transaction_tables(m: Metrics) -> list[dict[str, Any]]:
    """The messages by fate, then (with transactions) the checks per decision, the messages stored
    twice, the committed messages per consumer group and what each fault's window held."""
    x, scale = m.get("transactions") or {}, m["scale"]
    if not x:
        return []
    h, c, r, d, o = x["halves"], x["committed"], x["rolled_back"], x["discarded"], x["open"]
    out = [{"headers": ["fate", "messages", "first-hand", "after a check", "delivered"],
            "rows": [["committed", fmt_num(c["total"]), fmt_num(c["first_hand"]), fmt_num(c["after_check"]),
                      fmt_num(c["consumed"])],
                     ["rolled back", fmt_num(r["total"]), fmt_num(r["first_hand"]), fmt_num(r["after_check"]),
                      fmt_num(r["delivered"])],
                     ["discarded", fmt_num(d["total"]), "", "", fmt_num(d["delivered"])],
                     ["still open", fmt_num(o["total"]), "", "", fmt_num(o["delivered"])]],
            "numeric": [False, True, True, True, True], "title": "Transactional messages",
            "caption": f"{fmt_num(h['sent'])} half message(s) sent ok, {fmt_num(h['stored'])} stored "
                       f"({fmt_num(h['stored_again'])} more than once). A message's fate, first match wins: a commit, "
                       f"a rollback, a discard after {fmt_num(d['max_checks'])} x the maximum checks or "
                       f"{fmt_num(d['expired'])} x expired, else open. Delivered: consumed by some group, which only a "
                       f"committed message may be. Half to visible: p50 {fmt_ms(x['visible']['p50_ms'], scale)}, "
                       f"p99 {fmt_ms(x['visible']['p99_ms'], scale)}, max {fmt_ms(x['visible']['max_ms'], scale)}. "
                       f"{fmt_num(x['checks']['sent'])} check(s) sent, {fmt_num(x['checks']['no_channel'])} to no "
                       f"producer channel."}]
    if not h["stored"] and not c["total"]:
        return out
    dup = x["duplicates"]
    return out + [
        {"headers": ["checks", "committed after them", "rolled back after them"],
         "rows": ([fmt_num(b["checks"]), fmt_num(b["committed"]), fmt_num(b["rolled_back"])] for b in x["by_checks"]),
         "numeric": [True, True, True], "empty": "No message was decided by a check's answer.",
         "title": "Decided after checks", "caption": "How many checks a message took before the answer that decided "
                                                     "it (the check_times of the check its end answered)."},
        {"headers": ["stored twice by", "messages"],
         "rows": [[text, fmt_num(dup["by_cause"][k])] for k, text in _CAUSES.items()]
         + [["all (of them delivered twice: " + fmt_num(dup["delivered_twice"]) + ")", fmt_num(dup["stored_twice"])]],
         "numeric": [False, True], "title": "Committed messages stored twice",
         "caption": "4.9.4's commit is not idempotent: every ok commit of a msg_id stores the message again."},
        {"headers": ["group", "topic", "committed", "consumed", "lost", "gone with their consumers", "dead-lettered",
                     "retrying", "still delayed"],
         "rows": ([g["group"], g["topic"], *[fmt_num(g[k]) for k in ("committed", "consumed", "lost", "gone",
                                                                      "dead_lettered", "retrying", "delayed")]]
                  for g in x["groups"]),
         "numeric": [False, False] + [True] * 7,
         "empty": "No consumer group subscribes a topic with committed messages.",
         "title": "Committed messages per consumer group",
         "caption": "Each group subscribing a topic must get every message committed to it before run.stop."},
        {"headers": ["fault", "kind", "starts after", "window ends after", "messages", "committed", "rolled back",
                     "after a check", "discarded", "open", "stored twice", "rolled back, delivered", "checks",
                     "to no channel"],
         "rows": ([f["fault_id"], f["fault"], fmt_ms(f["start_offset_ms"], scale),
                   fmt_ms(f["impact_end_offset_ms"], scale), *[fmt_num(f[k]) for k in _FAULT_COUNTS]]
                  for f in x["faults"]),
         "numeric": [False, False] + [True] * 12, "empty": "No faults were injected in this run.",
         "title": "Transactions per fault",
         "caption": "The messages alive (from their half to their last end) in each fault's attribution window."},
    ]
