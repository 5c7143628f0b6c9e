"""One run's transactions section (docs/design.md §7 "Transactions") from its combined tables: the
messages of :func:`reports.core.transactions.messages` counted by fate, the checks, the committed
messages' consumption per consumer group and what each fault's window held.
:func:`reports.core.analysis.combine` makes one.

The committed messages are judged per (consumer group, topic) by a :class:`~reports.core.settle.Fates`
of their own, whose acks are their first commits (:func:`reports.core.transactions.commit_acks`):
consumed, or dead-lettered, retrying, delayed, gone or lost, as the loss metrics judge acked messages.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core import transactions as tx_mod
from rmqemu.reports.core.availability import attribution_end
from rmqemu.reports.core.failover_sends import deliveries
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.core.intervals import START
from rmqemu.reports.core.settle import FATES, Fates

#: The columns of :meth:`TransactionRun.groups`.
GROUP_COLUMNS: tuple[str, ...] = ("group", "topic", "committed", "consumed", *FATES)
#: The counts of :meth:`TransactionRun.faults`, after ``fault_id, fault, start_offset_ms, impact_end_offset_ms``.
FAULT_COUNTS: tuple[str, ...] = ("messages", "committed", "rolled_back", "after_check", "discarded", "open",
                                 "stored_twice", "rolled_back_delivered", "checks", "checks_no_channel")


class TransactionRun:
    """The transactions tables of one run; ``t``: the run's tables as :func:`reports.core.analysis.combine`
    holds them (``tx_lines``, ``consumer_lines``, ``faults``, ``convergence`` for :meth:`faults`);
    ``fates_of``: a :class:`Fates` of the run's lines over the acks it is given; ``unheld``: the
    consume lines left out of duplicates (:attr:`reports.core.order_run.OrderRun.unheld_lines`)."""

    def __init__(self, t: Mapping[str, pd.DataFrame], info: RunInfo, fates_of: Callable[[pd.DataFrame], Fates],
                 unheld: Callable[[], np.ndarray]) -> None:
        self.t, self.info, self._fates_of, self._unheld = t, info, fates_of, unheld

    @cached_property
    def msgs(self) -> pd.DataFrame:
        return tx_mod.messages(self.t["tx_lines"], self.info.run_end)

    @cached_property
    def fates(self) -> Fates:
        return self._fates_of(tx_mod.commit_acks(self.msgs))

    @cached_property
    def delivered(self) -> np.ndarray:
        """Per message: whether a ``consume`` line of any group lists it (any topic, a retry by the id
        first acked)."""
        if self.msgs.empty:
            return np.zeros(0, dtype=bool)
        return self.msgs["msg_id"].isin(self.fates.consumed["msg"]).to_numpy(bool)

    @cached_property
    def delivered_twice(self) -> set[Any]:
        """The messages some group consumed more than once from their own topic (not counting the
        deliveries a real orderly client dropped, as the consumption duplicates)."""
        if not (self.msgs["commits"] >= 2).any():
            return set()
        dl = deliveries(self.t["consumer_lines"], self._unheld())
        pair = (tx_mod.codes(dl["consumer_group"]) + 1) * (len(dl) + 2) + tx_mod.codes(dl["msg_id"]) + 1
        again = pd.Series(pair).duplicated().to_numpy(bool)  # integer keys: see tx_mod.codes
        return set(dl.loc[again, "msg_id"])

    # ---- metrics queries (``m.tx_*``) -----------------------------------------------------------

    def totals(self) -> pd.DataFrame:
        """One row: the section's counts (:mod:`reports.metrics_transactions` nests them)."""
        m, tx = self.msgs, self.t["tx_lines"]
        fate, after = m["fate"].to_numpy(dtype=object), m["after_check"].to_numpy(bool)
        dl = self.delivered

        def n(mask: np.ndarray) -> int:
            return int(np.count_nonzero(mask))
        ok = (tx["outcome"] == "ok").fillna(False).to_numpy(bool)
        half_sends = tx.loc[(tx["kind"] == "send").to_numpy(bool) & ok]
        checks = tx.loc[(tx["kind"] == "tx.check").to_numpy(bool)]
        groups = self.groups()
        twice = (m["commits"] >= 2).to_numpy(bool)
        row: dict[str, Any] = {
            "sent": tx_mod.distinct(half_sends["msg_id"]), "stored": n(m["halves"] > 0),
            "stored_again": n(m["halves"] > 1)}
        for name in tx_mod.FATES:
            row[name] = n(fate == name)
            row[f"{name}_delivered"] = n((fate == name) & dl)
        for name in ("committed", "rolled_back"):
            row[f"{name}_first_hand"] = n((fate == name) & ~after)
            row[f"{name}_after_check"] = n((fate == name) & after)
        for reason in tx_mod.DISCARD_REASONS:
            row[f"discarded_{reason}"] = n((fate == "discarded") & (m["discard_reason"] == reason).to_numpy(bool))
        row["committed_lost_per_group"] = int(groups["lost"].sum())
        row["committed_gone_per_group"] = int(groups["gone"].sum())
        row["stored_twice"] = n(twice)
        row["delivered_twice"] = n(twice & m["msg_id"].isin(self.delivered_twice).to_numpy(bool))
        for cause in tx_mod.CAUSES:
            row[f"cause_{cause}"] = n((m["cause"] == cause).to_numpy(bool))
        row["checks"] = len(checks)
        row["checks_no_channel"] = n(checks["client_id"].isna().to_numpy(bool))
        row["checked_messages"] = tx_mod.distinct(checks["msg_id"])
        visible = tx_mod.percentiles(m["visible_ms"].to_numpy(float))
        row.update({f"visible_{k}": v for k, v in visible.items()})
        return pd.DataFrame([row])

    def by_checks(self) -> pd.DataFrame:
        """``checks, committed, rolled_back``: the messages decided after a check, by how many checks
        it took (:func:`reports.core.transactions.messages`, ``checks``)."""
        m = self.msgs.loc[self.msgs["after_check"].to_numpy(bool)]
        out = pd.crosstab(m["checks"], m["fate"]) if len(m) else pd.DataFrame()
        out = out.reindex(columns=["committed", "rolled_back"], fill_value=0)
        out = out.rename_axis("checks").reset_index() if len(m) else pd.DataFrame(
            {"checks": pd.Series(dtype=np.int64), "committed": pd.Series(dtype=np.int64),
             "rolled_back": pd.Series(dtype=np.int64)})
        return out[["checks", "committed", "rolled_back"]].astype(np.int64).reset_index(drop=True)

    @cached_property
    def _groups(self) -> pd.DataFrame:
        if self.msgs.empty:
            return pd.DataFrame({c: pd.Series(dtype=object if c in ("group", "topic") else np.int64)
                                 for c in GROUP_COLUMNS})
        f = self.fates
        topics = set(f.acked["topic"].dropna())
        subs = f.subs.loc[f.subs["topic"].isin(topics).to_numpy(bool)]
        rows = []
        for group, topic in subs.itertuples(index=False):
            got = f.per_group(group, topic)
            rows.append((group, topic, sum(got.values()), *(got[c] for c in GROUP_COLUMNS[3:])))
        out = pd.DataFrame(rows, columns=list(GROUP_COLUMNS))
        return out.astype({"group": object, "topic": object, **{c: np.int64 for c in GROUP_COLUMNS[2:]}})

    def groups(self) -> pd.DataFrame:
        """:data:`GROUP_COLUMNS` per (consumer group, topic) it subscribes that has committed
        messages: ``committed`` (first committed before run.stop), ``consumed`` and the fates of the
        rest (:data:`reports.core.settle.FATES`)."""
        return self._groups

    def faults(self) -> pd.DataFrame:
        """One row per fault: its attribution window (docs/design.md §9) and the messages whose life
        (:func:`reports.core.transactions.messages`) overlaps it, by what became of them, and the
        checks sent in it."""
        conv = self.t["convergence"].merge(self.t["faults"][["fault_id", "end"]], on="fault_id")
        lo = conv[START].to_numpy(float)
        hi = attribution_end(lo, conv["end"].to_numpy(float), conv["converged_ms"].to_numpy(float))
        m, tx = self.msgs, self.t["tx_lines"]
        ls, le = m["life_start"].to_numpy(float), m["life_end"].to_numpy(float)
        fate = m["fate"].to_numpy(dtype=object)
        each = {"committed": fate == "committed", "rolled_back": fate == "rolled_back",
                "after_check": m["after_check"].to_numpy(bool), "discarded": fate == "discarded",
                "open": fate == "open", "stored_twice": (m["commits"] >= 2).to_numpy(bool),
                "rolled_back_delivered": (fate == "rolled_back") & self.delivered}
        checks = tx.loc[(tx["kind"] == "tx.check").to_numpy(bool)]
        ct, blind = checks["ts"].to_numpy(float), checks["client_id"].isna().to_numpy(bool)
        counts: dict[str, list[int]] = {c: [] for c in FAULT_COUNTS}
        for a, b in zip(lo, hi, strict=True):  # the few faults
            held = (ls < b) & ((le > a) | (ls >= a))
            counts["messages"].append(int(held.sum()))
            for name, mask in each.items():
                counts[name].append(int((held & mask).sum()))
            sent = (ct >= a) & (ct < b)
            counts["checks"].append(int(sent.sum()))
            counts["checks_no_channel"].append(int((sent & blind).sum()))
        out = pd.DataFrame({"fault_id": conv["fault_id"].to_numpy(dtype=object),
                            "fault": conv["fault"].to_numpy(dtype=object),
                            "start_offset_ms": lo - self.info.run_start,
                            "impact_end_offset_ms": hi - self.info.run_start})
        for c in FAULT_COUNTS:
            out[c] = np.array(counts[c], dtype=np.int64)
        return out
