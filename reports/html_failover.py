"""report.html's tables of DLedger failovers (docs/design.md §7 "DLedger failovers"): plain rows
from metrics.json, laid out by :func:`reports.html.table` (each dict here is its keyword
arguments). The groups' table is always there; the rest only when the run had a DLedger group, and
the lost messages whenever there are any: a loss is never left out."""
from __future__ import annotations

from typing import Any

from rmqemu.reports.summary import Metrics, fmt_ms, fmt_num

_GOT = {"ok": "ok", "timeout": "timeout", "refused": "refused", "not_available": "14 SERVICE_NOT_AVAILABLE",
        "system_error": "1 SYSTEM_ERROR", "other": "other"}


def _opt(value: Any, scale: float) -> str:
    return "never" if value is None else fmt_ms(value, scale)


def failover_tables(m: Metrics) -> list[dict[str, Any]]:
    """The groups, their failovers, the sends to old masters, the route views behind, the producers'
    recoveries and the lost messages."""
    f, scale = m.get("failover") or {}, m["scale"]
    groups = f.get("groups") or []
    counts = ("peers", "elections", "failovers", "max_term")
    out = [{"headers": ["group", "peers", "elections", "failovers", "largest term", "without a master",
                        "longest", "sends to an old master", "acked lost", "duplicated by retries",
                        "re-consumed", "log entries truncated"],
            "rows": ([g["group"], *[fmt_num(g[k]) for k in counts], fmt_ms(g["no_master_ms"], scale),
                      fmt_ms(g["max_no_master_ms"], scale),
                      *[fmt_num(g[k]) for k in ("stale_master_sends", "acked_lost", "duplicates", "reconsumed",
                                                 "truncated")]] for g in groups),
            "numeric": [False] + [True] * 11, "empty": "No DLedger broker group in this run.",
            "title": "DLedger groups",
            "caption": "Broker groups that elect their master (enableDLegerCommitLog). A failover is a leadership "
                       "after a group's first; without a master: from the old leader's stop to the new leader's "
                       "broker taking brokerId 0. Acked lost should be 0 with quorum writes."}]
    if f.get("lost"):
        out.append({"headers": ["group", "consumer group", "topic", "message"],
                    "rows": ([x["group"], x["consumer_group"], x["topic"], x["msg_id"]] for x in f["lost"]),
                    "title": "Acked messages lost by a DLedger group",
                    "caption": f"{fmt_num(f['acked_lost'])} acked message(s) whose first ok send went to a DLedger "
                               "group, never consumed by a consumer group still consuming at run.stop."})
    if not groups:
        return out
    by = f.get("stale_master_sends") or {}
    out += [
        {"headers": ["group", "term", "new leader", "old leader", "fault", "hit", "stopped at", "elected after",
                     "master after", "slowest namesrv", "slowest client", "views never updated",
                     "sends to the old master", "RTO", "duplicated", "re-consumed"],
         "rows": ([c["group"], fmt_num(c["term"]), c["node"], c["old_node"],
                   f"{c['fault_id']} ({c['fault']})" if c["fault_id"] else "none", c["hit"] or "",
                   fmt_ms(c["stopped_offset_ms"], scale), fmt_ms(c["election_ms"], scale),
                   _opt(c["no_master_ms"] if c["master_offset_ms"] is not None else None, scale),
                   fmt_ms(c["namesrvs_stale_ms"], scale), fmt_ms(c["clients_stale_ms"], scale),
                   fmt_num(c["unseen_views"]), fmt_num(c["stale_master_sends"]), fmt_ms(c["rto_ms"], scale),
                   fmt_num(c["duplicates"]), fmt_num(c["reconsumed"])] for c in f.get("changes") or []),
         "numeric": [False, True, False, False, False, False] + [True] * 10, "empty": "No failover: every group "
         "kept its first leader.", "title": "Failovers",
         "caption": "Per change of leader: after the old leader stopped (its death, pause or cut-off, or its step "
                    "down), the election, the new leader's broker taking brokerId 0, how long namesrvs and clients "
                    "kept the old master, and what that cost the clients."},
        {"headers": ["group", "fault", "kind", "starts after", "hit the", "failovers it caused"],
         "rows": ([x["group"], x["fault_id"], x["fault"], fmt_ms(x["start_offset_ms"], scale), x["hit"],
                   fmt_num(x["failovers"])] for x in f.get("faults") or []),
         "numeric": [False, False, False, True, False, True], "empty": "No fault hit a member of a DLedger group.",
         "title": "Faults on DLedger members",
         "caption": "Each fault whose targets held a member: the leader's node then, or a follower's."},
        {"headers": ["what the send got", "attempts"],
         "rows": [[_GOT[g], fmt_num(n)] for g, n in (by.get("by_got") or {}).items() if n]
         + [["all sends to an old master", fmt_num(by.get("total"))]],
         "numeric": [False, True], "title": "Sends to an old master",
         "caption": "Attempts to a failover's group at its old leader's address after it stopped leading."},
        {"headers": ["group", "term", "namesrv or client", "node", "showed it by", "at", "stale for"],
         "rows": ([v["group"], fmt_num(v["term"]), v["who"], v["node"], v["by"] or "never",
                   _opt(v["seen_offset_ms"], scale), fmt_ms(v["stale_ms"], scale)]
                  for v in sorted(f.get("views") or [], key=lambda v: -v["stale_ms"])),
         "numeric": [False, True, False, False, False, True, True], "title": "Route views behind a moving master",
         "caption": "When each namesrv's table and each client's route showed a failover's new master (a client "
                    "polls its route every 30 s), stalest first."},
        {"headers": ["group", "term", "producer", "first failed send", "next ok send", "RTO"],
         "rows": ([r["group"], fmt_num(r["term"]), r["producer"], fmt_ms(r["failed_offset_ms"], scale),
                   _opt(r["recovered_offset_ms"], scale), fmt_ms(r["rto_ms"], scale)] for r in f.get("rto") or []),
         "numeric": [False, True, False, True, True, True], "empty": "No producer failed a send to a group in a "
         "failover.", "title": "Producer recovery after a failover",
         "caption": "Per producer, as openchaos measures it: from its first failed send to the group in the "
                    "failover to its next ok one."},
    ]
    return out
