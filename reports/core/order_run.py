"""One run's order analysis (docs/design.md §7 "Order") from its combined tables: the checker
(:mod:`reports.core.order`), the holds it judges handovers by (:mod:`reports.core.order_locks`)
and the ordered sends against the routes (:mod:`reports.core.order_routes`), each computed once
for the metrics queries and plots that read it. :func:`reports.core.analysis.combine` makes one.

The plot tables keep at most :data:`MAX_KEYS` keys (those with the most violations, then the most
moves) and cut each key's attempts into the run's time bins: per bin the queue of its last
attempt and whether one failed, adjacent equal bins merged.
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
    def sequences(self) -> pd.DataFrame:
        lines = self.t["consumer_lines"]
        dl = order.deliveries(lines, self.groups)
        keyed = order.key_sequences(order.ordered_acks(self.t["classified"]), dl, lines, self.groups)
        queued = order.queue_sequences(dl, keyed)
        return pd.concat([keyed, queued], ignore_index=True) if len(queued) and len(keyed) else \
            (queued if len(queued) else keyed)

    @cached_property
    def violations(self) -> pd.DataFrame:
        """:data:`reports.core.order.VIOLATION_COLUMNS` plus ``change`` (a remap's route change)."""
        held = order_locks.holds(self.t["lock_lines"], self.t["lives"], self.info.scale, self.info.run_end)
        viol = order.violations(self.sequences, held)
        return viol.assign(change=order_routes.remap_changes(viol, self.moves))

    @cached_property
    def moves(self) -> pd.DataFrame:
        return order_routes.moves(self.attempts, self.t["route_changes"])

    def moved(self) -> pd.DataFrame:
        """One row: ``keys`` that moved to another queue, and their ``moves``."""
        return pd.DataFrame({"keys": [self.moves["key"].nunique()], "moves": [len(self.moves)]}, dtype=np.int64)

    def summary(self) -> pd.DataFrame:
        return order.summary(self.sequences, self.violations)

    def remaps(self) -> pd.DataFrame:
        return order_routes.remaps(self.moves, self.violations, self.t["route_changes"], self.t["client_intervals"])

    def failed(self) -> pd.DataFrame:
        return order_routes.failed_sends(self.attempts, self.t["client_intervals"])

    def availability(self) -> pd.DataFrame:
        return order_routes.key_availability(self.attempts, self.info.measure_end)

    def plot_tables(self) -> dict[str, pd.DataFrame]:
        """``p.order_keys`` (key, queue, failed, start_s, end_s), ``p.order_marks`` (key, t_s,
        violation, cause) and ``p.order_changes`` (producer, topic, t_s, label)."""
        t0, bin_ms = self.info.run_start, self.info.bin_ms
        att, viol = self.attempts, self.violations
        keyed = viol[(viol["by"] == order.BY_KEY).to_numpy(bool)]
        rank = pd.DataFrame({"v": keyed.groupby("unit").size(), "m": self.moves.groupby("key").size()})
        rank = rank.reindex(rank.index.union(pd.Index(att["sharding_key"].dropna().unique()))).fillna(0)
        rank = rank.rename_axis("key").reset_index().sort_values(["v", "m", "key"], ascending=[False, False, True])
        keys = list(rank["key"].head(MAX_KEYS))
        a = att[att["sharding_key"].isin(keys).to_numpy(bool)]
        a = a.assign(bin=np.floor((a["sent"].to_numpy(float) - t0) / bin_ms).astype(np.int64),
                     queue=a["broker"].astype(str) + ":" + a["queue_id"].astype(str),
                     bad=~(a["outcome"] == "ok").fillna(False).to_numpy(bool))
        a = a.sort_values(["sharding_key", "bin", "sent"], kind="stable")
        g = a.groupby(["sharding_key", "bin"], sort=True)
        bins = pd.DataFrame({"queue": g["queue"].last(), "failed": g["bad"].any()}).reset_index()
        k, b = bins["sharding_key"].to_numpy(object), bins["bin"].to_numpy()
        opens = np.r_[True, (k[1:] != k[:-1]) | (b[1:] != b[:-1] + 1)
                      | (bins["queue"].to_numpy(object)[1:] != bins["queue"].to_numpy(object)[:-1])
                      | (bins["failed"].to_numpy(bool)[1:] != bins["failed"].to_numpy(bool)[:-1])] if len(bins) \
            else np.zeros(0, bool)
        runs = bins.assign(_r=np.cumsum(opens)).groupby("_r").agg(
            key=("sharding_key", "first"), queue=("queue", "first"), failed=("failed", "first"),
            lo=("bin", "min"), hi=("bin", "max"))
        lanes = pd.DataFrame({"key": runs["key"], "queue": runs["queue"], "failed": runs["failed"].astype(bool),
                              "start_s": runs["lo"] * bin_ms / 1000.0, "end_s": (runs["hi"] + 1) * bin_ms / 1000.0})
        marks = keyed[keyed["unit"].isin(keys).to_numpy(bool)]
        producers = set(a["producer"].dropna())
        ch = self.t["route_changes"]
        ch = ch[ch["client"].isin(producers).to_numpy(bool) & ch["before"].notna().to_numpy(bool)]
        return {
            "p.order_keys": lanes.reset_index(drop=True).astype({"start_s": float, "end_s": float}),
            "p.order_marks": pd.DataFrame({"key": marks["unit"].to_numpy(object),
                                           "t_s": (marks["ts"].to_numpy(float) - t0) / 1000.0,
                                           "violation": marks["violation"].to_numpy(object),
                                           "cause": marks["cause"].to_numpy(object)}),
            "p.order_changes": pd.DataFrame({
                "producer": ch["client"].to_numpy(object), "topic": ch["topic"].to_numpy(object),
                "t_s": (ch["ts"].to_numpy(float) - t0) / 1000.0,
                "label": [f"{', '.join(b)} -> {', '.join(c)} ({qb} -> {qa} queues)" for b, c, qb, qa in
                          zip(ch["before"], ch["after"], ch["queues_before"], ch["queues_after"], strict=True)]}),
        }
