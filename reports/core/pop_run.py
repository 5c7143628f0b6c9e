"""One run's POP section (docs/design.md §7 "POP consumption") from its combined tables: leases,
redeliveries, acks by who answered and why, delivery attempts, the proxies' DLQ sends, the FIFO
groups' order and what each fault's window held. :func:`reports.core.analysis.combine` makes one.

The counts are the brokers' and proxies' own lines, never a client's ``consume`` lines: the
consumption section's ``duplicate_deliveries`` already counts what clients were handed twice.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core import pop
from rmqemu.reports.core.availability import attribution_end
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.core.intervals import START

#: The columns of :meth:`PopRun.fifo_groups`.
FIFO_COLUMNS: tuple[str, ...] = ("group", "message_groups", "messages", *pop.VIOLATIONS)
#: The counts of :meth:`PopRun.faults`, after ``fault_id, fault, start_offset_ms, impact_end_offset_ms``.
FAULT_COUNTS: tuple[str, ...] = ("leases", "expired", "redelivered", "proxy_refused", "broker_refused", "dlq",
                                 *pop.VIOLATIONS)


class PopRun:
    """The POP tables of one run; ``t``: the run's tables as :func:`reports.core.analysis.combine`
    holds them (``pop_lines``; ``faults`` and ``convergence`` for :meth:`faults`)."""

    def __init__(self, t: Mapping[str, pd.DataFrame], info: RunInfo) -> None:
        self.t, self.info = t, info
        self.lines = t["pop_lines"]

    @cached_property
    def msgs(self) -> pd.DataFrame:
        return pop.messages(self.lines)

    @cached_property
    def violations(self) -> pd.DataFrame:
        return pop.fifo_violations(self.lines)

    def _kind(self, kind: str) -> pd.DataFrame:
        return pop.of_kind(self.lines, kind)

    def totals(self) -> pd.DataFrame:
        """One row: the section's counts (:mod:`reports.metrics_pop` nests them)."""
        leases, revives = self._kind("pop.lease"), self._kind("pop.revive")
        acks, packs = self._kind("pop.ack"), self._kind("proxy.ack")
        renew, dlq = self._kind("pop.change_invisible"), self._kind("proxy.dlq")
        m = self.msgs

        def n(mask: Any) -> int:
            return int(np.count_nonzero(np.asarray(mask, dtype=bool)))
        revived = revives["result"].isin(pop.REVIVED).to_numpy(bool)
        row: dict[str, Any] = {
            "leases": len(leases), "leases_fifo": n(leases["fifo"].fillna(False)),
            "leases_retry": n(leases["retry"].fillna(False)), "leases_expired": n(revived),
            "leases_redelivered": n(leases["attempt"].fillna(1) > 1), "revive_failed": n(~revived),
            "messages": len(m), "messages_redelivered": n(m["redelivered"]), "messages_acked": n(m["acked"]),
            "messages_unacked": n(~m["acked"].to_numpy(bool)),
            "attempts_once": n(m["leases"] == 1), "attempts_twice": n(m["leases"] == 2),
            "attempts_three_or_more": n(m["leases"] >= 3),
            "attempts_max": int(m["max_attempt"].max()) if len(m) else 0,
            "renewals_proxy": len(self._kind("proxy.change_invisible")),
            "renewals_ok": n(renew["result"] == "ok"), "renewals_refused": n(renew["result"] != "ok"),
            "dlq_sent": n(dlq["result"] == "ok"), "dlq_failed": n(dlq["result"] != "ok"),
            "broker_acks": len(acks), "proxy_acks": len(packs)}
        known = set(pop.BROKER_ACK_RESULTS)
        for r in pop.BROKER_ACK_RESULTS:
            row[f"broker_ack_{r}"] = n(acks["result"] == r)
        row["broker_ack_other"] = n(~acks["result"].isin(known).to_numpy(bool))
        results = pop.proxy_ack_result(packs["result"])
        for r in pop.PROXY_ACK_RESULTS:
            row[f"proxy_ack_{r}"] = n(results == r)
        fifo = self.fifo_groups()
        row["fifo_message_groups"] = int(fifo["message_groups"].sum())
        row["fifo_messages"] = int(fifo["messages"].sum())
        for v in pop.VIOLATIONS:
            row[f"fifo_{v}"] = int(fifo[v].sum())
        return pd.DataFrame([row])

    def fifo_groups(self) -> pd.DataFrame:
        """:data:`FIFO_COLUMNS` per consumer group with FIFO leases of messages sent with a message
        group: the message groups and messages it was handed, and the messages of each violation
        (:func:`reports.core.pop.fifo_violations`)."""
        leases = self._kind("pop.lease")
        leases = leases.loc[leases["fifo"].fillna(False).to_numpy(bool)]
        sends = self._kind("send").dropna(subset=["msg_id", "sharding_key"]).drop_duplicates(["topic", "msg_id"])
        dl = leases[["group", "topic", "msg_id"]].merge(sends[["topic", "msg_id", "sharding_key"]],
                                                        on=["topic", "msg_id"])
        rows = []
        v = self.violations
        for group, d in dl.groupby("group", sort=True):
            mine = v.loc[(v["group"] == group).to_numpy(bool)]
            rows.append((group, d[["topic", "sharding_key"]].drop_duplicates().shape[0], d["msg_id"].nunique(),
                         *(int((mine["violation"] == k).sum()) for k in pop.VIOLATIONS)))
        out = pd.DataFrame(rows, columns=list(FIFO_COLUMNS))
        return out.astype({"group": object, **{c: np.int64 for c in FIFO_COLUMNS[1:]}})

    def faults(self) -> pd.DataFrame:
        """One row per fault: what happened in its attribution window (docs/design.md §9), by the
        lines' ``ts``: leases granted, expired (revived), redelivered (attempt > 1), the proxies'
        ack refusals (``expired``, ``invalid``), the brokers' (a ``pop.ack`` not :data:`ACKED`),
        DLQ sends, and FIFO violations."""
        conv = self.t["convergence"].merge(self.t["faults"][["fault_id", "end"]], on="fault_id")
        lo = conv[START].to_numpy(float)
        hi = attribution_end(lo, conv["end"].to_numpy(float), conv["converged_ms"].to_numpy(float))
        leases, revives = self._kind("pop.lease"), self._kind("pop.revive")
        acks, packs, dlq = self._kind("pop.ack"), self._kind("proxy.ack"), self._kind("proxy.dlq")
        at = {"leases": leases["ts"], "expired": revives.loc[revives["result"].isin(pop.REVIVED), "ts"],
              "redelivered": leases.loc[(leases["attempt"].fillna(1) > 1).to_numpy(bool), "ts"],
              "proxy_refused": packs.loc[packs["result"].isin(("expired", "invalid")).to_numpy(bool), "ts"],
              "broker_refused": acks.loc[~acks["result"].isin(pop.ACKED).to_numpy(bool), "ts"], "dlq": dlq["ts"],
              **{k: self.violations.loc[(self.violations["violation"] == k).to_numpy(bool), "ts"]
                 for k in pop.VIOLATIONS}}
        out = pd.DataFrame({"fault_id": conv["fault_id"].to_numpy(dtype=object),
                            "fault": conv["fault"].to_numpy(dtype=object),
                            "start_offset_ms": lo - self.info.run_start,
                            "impact_end_offset_ms": hi - self.info.run_start})
        for c in FAULT_COUNTS:
            ts = at[c].to_numpy(float)
            out[c] = np.array([int(((ts >= a) & (ts < b)).sum()) for a, b in zip(lo, hi, strict=True)], dtype=np.int64)
        return out
