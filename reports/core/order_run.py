"""One run's order analysis (docs/design.md §7 "Order") from its combined tables: the checker
(:mod:`reports.core.order`), the holds it judges handovers by (:mod:`reports.core.order_locks`)
and the ordered sends against the routes (:mod:`reports.core.order_routes`), each computed once
for the metrics queries and plots that read it. :func:`reports.core.analysis.combine` makes one.

The plot tables keep at most :data:`MAX_KEYS` keys (those with the most violations, then the most
moves): each key's runs of attempts on one queue, and its failures and violations per time bin, so
what is drawn stays small however many messages a key sent.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np
import pandas as pd

from rmqemu.reports.core import order, order_locks, order_routes
from rmqemu.reports.core.frame import RunInfo

#: Keys drawn in the order plot.
MAX_KEYS = 24


class OrderRun:
    """The order tables of one run; ``t``: the run's tables as :func:`reports.core.analysis.combine`
    holds them (``classified``, ``consumer_lines``, ``lock_lines``, ``route_changes``,
    ``client_intervals``, ``lives``)."""

    def __init__(self, t: Mapping[str, pd.DataFrame], info: RunInfo) -> None:
        self.t, self.info = t, info

    @cached_property
    def attempts(self) -> pd.DataFrame:
        return order_routes.ordered_attempts(self.t["classified"])

    @cached_property
    def groups(self) -> list[str]:
        return order.orderly_groups(self.t["consumer_lines"], self.t["lock_lines"])

    @cached_property
    def held(self) -> pd.DataFrame:
        return order_locks.holds(self.t["lock_lines"], self.t["lives"], self.info.scale, self.info.run_end)

    @cached_property
    def unheld_lines(self) -> np.ndarray:
        """For each row of ``consumer_lines``: whether it is a ``consume`` line whose deliveries are
        unheld (:func:`reports.core.order_locks.unheld`). Computed once: the checker and the
        consumption duplicates (:class:`reports.core.consumers.Messages`) leave the same ones out."""
        lines = self.t["consumer_lines"]
        is_consume = (lines["kind"] == "consume").to_numpy(bool)
        out = np.zeros(len(lines), dtype=bool)
        dl = lines.loc[is_consume, ["group", "node", "ts", *order_locks.QUEUE]]
        out[is_consume] = order_locks.unheld(lambda: self.held, self.t["lock_lines"], dl, self.info.run_end)
        return out

    @cached_property
    def checked(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The sequences the checker judges (per key, then per queue), and the ``group, by`` of each
        delivery left out as unheld (a real client's, from a queue it did not hold then)."""
        lines = self.t["consumer_lines"]
        dl = order.deliveries(lines, self.groups)
        left_out = self.unheld_lines[dl["line"].to_numpy(np.int64)]
        out, dl = dl[left_out], dl[~left_out]
        keyed = order.key_sequences(order.ordered_acks(self.t["classified"]), dl, lines, self.groups)
        queued = order.queue_sequences(dl, keyed)
        seqs = pd.concat([keyed, queued], ignore_index=True) if len(queued) and len(keyed) else \
            (queued if len(queued) else keyed)
        return seqs, order.unheld_checks(out, keyed)

    @property
    def sequences(self) -> pd.DataFrame:
        return self.checked[0]

    @cached_property
    def violations(self) -> pd.DataFrame:
        """:data:`reports.core.order.VIOLATION_COLUMNS` plus ``change`` (a remap's route change)."""
        viol = order.violations(self.sequences, self.held)
        return viol.assign(change=order_routes.remap_changes(viol, self.moves))

    @cached_property
    def moves(self) -> pd.DataFrame:
        return order_routes.moves(self.attempts, self.t["route_changes"])

    def moved(self) -> pd.DataFrame:
        """One row: ``keys`` that moved to another queue, and their ``moves``."""
        return pd.DataFrame({"keys": [self.moves["key"].nunique()], "moves": [len(self.moves)]}, dtype=np.int64)

    def summary(self) -> pd.DataFrame:
        return order.summary(self.sequences, self.violations, self.checked[1])

    def remaps(self) -> pd.DataFrame:
        return order_routes.remaps(self.moves, self.violations, self.t["route_changes"], self.t["client_intervals"])

    def failed(self) -> pd.DataFrame:
        return order_routes.failed_sends(self.attempts, self.t["client_intervals"])

    def availability(self) -> pd.DataFrame:
        return order_routes.key_availability(self.attempts, self.info.measure_end)

    def plot_tables(self) -> dict[str, pd.DataFrame]:
        """``p.order_keys`` (key, queue, start_s, end_s: a key's runs of attempts on one queue, each
        until the next run or a bin past the key's last attempt), ``p.order_failed`` (key, t_s:
        the time bins where one of its attempts failed), ``p.order_marks`` (key, t_s, violation,
        n: its violations per time bin, at the consumption) and ``p.order_changes`` (producer,
        topic, t_s, label: the route changes of their producers)."""
        t0, bin_ms = self.info.run_start, self.info.bin_ms
        att, viol = self.attempts, self.violations
        keyed = viol[(viol["by"] == order.BY_KEY).to_numpy(bool)]
        rank = pd.DataFrame({"v": keyed.groupby("unit").size(), "m": self.moves.groupby("key").size()})
        rank = rank.reindex(rank.index.union(pd.Index(att["sharding_key"].dropna().unique()))).fillna(0)
        rank = rank.rename_axis("key").reset_index().sort_values(["v", "m", "key"], ascending=[False, False, True])
        keys = list(rank["key"].head(MAX_KEYS))
        a = att[att["sharding_key"].isin(keys).to_numpy(bool)].sort_values(["sharding_key", "sent", "seq"],
                                                                           kind="stable")
        a = a.assign(t_s=(a["sent"].to_numpy(float) - t0) / 1000.0, bin=np.floor((a["sent"] - t0) / bin_ms))
        q = a[a["broker"].notna().to_numpy(bool)]
        q = q.assign(queue=q["broker"].astype(str) + ":" + q["queue_id"].astype(str))
        k, queue = q["sharding_key"].to_numpy(object), q["queue"].to_numpy(object)
        opens = np.r_[True, (k[1:] != k[:-1]) | (queue[1:] != queue[:-1])] if len(q) else np.zeros(0, bool)
        runs = q[opens]
        last = q.groupby("sharding_key")["t_s"].max() + bin_ms / 1000.0
        nxt = np.where(np.r_[runs["sharding_key"].to_numpy(object)[1:] == runs["sharding_key"].to_numpy(object)[:-1],
                             False], np.r_[runs["t_s"].to_numpy(float)[1:], np.nan], np.nan)
        end = np.where(np.isnan(nxt), runs["sharding_key"].map(last).to_numpy(float), nxt)
        bad = a[~(a["outcome"] == "ok").fillna(False).to_numpy(bool)].drop_duplicates(["sharding_key", "bin"])
        marks = keyed[keyed["unit"].isin(keys).to_numpy(bool)]
        marks = marks.assign(bin=np.floor((marks["ts"] - t0) / bin_ms)).groupby(
            ["unit", "violation", "bin"], sort=True).size().rename("n").reset_index()
        producers = set(a["producer"].dropna())
        ch = self.t["route_changes"]
        ch = ch[ch["client"].isin(producers).to_numpy(bool) & ch["before"].notna().to_numpy(bool)]
        return {
            "p.order_keys": pd.DataFrame({"key": runs["sharding_key"].to_numpy(object),
                                          "queue": runs["queue"].to_numpy(object),
                                          "start_s": runs["t_s"].to_numpy(float), "end_s": end.astype(float)}),
            "p.order_failed": pd.DataFrame({"key": bad["sharding_key"].to_numpy(object),
                                            "t_s": (bad["bin"].to_numpy(float) + 0.5) * bin_ms / 1000.0}),
            "p.order_marks": pd.DataFrame({"key": marks["unit"].to_numpy(object),
                                           "t_s": (marks["bin"].to_numpy(float) + 0.5) * bin_ms / 1000.0,
                                           "violation": marks["violation"].to_numpy(object),
                                           "n": marks["n"].to_numpy(np.int64)}),
            "p.order_changes": pd.DataFrame({
                "producer": ch["client"].to_numpy(object), "topic": ch["topic"].to_numpy(object),
                "t_s": (ch["ts"].to_numpy(float) - t0) / 1000.0,
                "label": [f"{', '.join(b)} -> {', '.join(c)} ({qb} -> {qa} queues)" for b, c, qb, qa in
                          zip(ch["before"], ch["after"], ch["queues_before"], ch["queues_after"], strict=True)]}),
        }
