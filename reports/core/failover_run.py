"""One run's DLedger failover section (docs/design.md §7 "DLedger failovers") from its combined
tables: the leaderships and failovers (:mod:`reports.core.failover`), the route views that had to
follow the moving master (:mod:`reports.core.failover_routes`) and what the clients paid
(:mod:`reports.core.failover_sends`), each computed once for the metrics queries and the plot.
:func:`reports.core.analysis.combine` makes one.

Times in the metrics rows are offsets from the run's first event (``..._offset_ms``), durations
in wall ms; the plot tables are in wall seconds since the run's first event.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property

import numpy as np
import pandas as pd

from rmqemu.reports.core import failover, failover_routes, failover_sends
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.core.intervals import START
from rmqemu.reports.core.settle import Fates

#: Client lanes drawn per group in the failover plot (the stalest).
MAX_CLIENTS = 24
_KEY = ["group", "term"]


def _count(df: pd.DataFrame, keys: list[str], name: str) -> pd.DataFrame:
    out = df.groupby(keys, sort=False, dropna=False).size().rename(name).reset_index()
    return out.astype({name: np.int64})


class FailoverRun:
    """The failover tables of one run; ``t``: the run's tables as :func:`reports.core.analysis.combine`
    holds them (step 1's :func:`reports.core.failover.truth_tables`, ``exits``, ``faults``, ``nodes``,
    ``classified``, ``failover_routes``, ``consumer_lines``); ``fates``: the run's
    :class:`~reports.core.settle.Fates`; ``unheld``: the consume lines left out of duplicates
    (:attr:`OrderRun.unheld_lines`). Leaderships and failovers come from step 1: the misrouting
    reason ``stale_master`` reads them too."""

    def __init__(self, t: Mapping[str, pd.DataFrame], info: RunInfo, fates: Callable[[], Fates],
                 unheld: Callable[[], np.ndarray]) -> None:
        self.t, self.info, self._fates, self._unheld = t, info, fates, unheld

    @property
    def members(self) -> pd.DataFrame:
        return self.t["dledger_members"]

    @property
    def leads(self) -> pd.DataFrame:
        return self.t["leaderships"]

    @property
    def failovers(self) -> pd.DataFrame:
        return self.t["failovers"]

    @cached_property
    def views(self) -> pd.DataFrame:
        nodes = self.t["nodes"]
        routes = self.t["failover_routes"]
        namesrvs = set(nodes.loc[(nodes["role"] == "namesrv").fillna(False).to_numpy(bool), "node"].dropna())
        namesrvs |= set(routes.loc[(routes["kind"] == "ns.route").to_numpy(bool), "node"].dropna())
        dl = self.t["dledger"]
        namesrvs |= set(dl.loc[(dl["kind"] == "ns.broker").to_numpy(bool), "node"].dropna())
        return failover_routes.views(self.failovers, dl, routes, self.t["addresses"], sorted(namesrvs))

    @cached_property
    def stale_sends(self) -> pd.DataFrame:
        return failover_sends.stale_master_sends(self.t["classified"], self.failovers, self.t["addresses"])

    @cached_property
    def rtos(self) -> pd.DataFrame:
        return failover_sends.rto(self.t["classified"], self.failovers, self.info.measure_end)

    @cached_property
    def deliveries(self) -> pd.DataFrame:
        return failover_sends.deliveries(self.t["consumer_lines"], self._unheld())

    @cached_property
    def duplicates(self) -> pd.DataFrame:
        groups = set(self.members["group"])
        return failover_sends.duplicates(self.t["classified"], self.deliveries, self.failovers, groups)

    @cached_property
    def reconsumed(self) -> pd.DataFrame:
        return failover_sends.reconsumed(self.deliveries, self.failovers)

    @cached_property
    def lost(self) -> pd.DataFrame:
        """``group, consumer_group, topic, msg_id``: acked messages whose first ok attempt went to a
        DLedger group and that a consumer group lost (:meth:`Fates.lost`: it still had consumers at
        run.stop and never consumed, failed, dead-lettered or waited for them)."""
        cols = ["group", "consumer_group", "topic", "msg_id"]
        groups = set(self.members["group"])
        if not groups:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
        s = self.t["classified"]
        ok = s[(s["outcome"] == "ok").fillna(False).to_numpy(bool)].sort_values(["ts", "seq"], kind="stable")
        first = ok.drop_duplicates(["topic", "msg_id"])
        first = first[first["broker"].isin(groups).to_numpy(bool)][["topic", "msg_id", "broker"]]
        fates = self._fates()
        rows = []
        for cg, topic in fates.subs[fates.subs["topic"].isin(first["topic"]).to_numpy(bool)].itertuples(index=False):
            ids = pd.DataFrame({"msg_id": fates.lost(cg, topic), "topic": topic})
            for r in ids.merge(first, on=["topic", "msg_id"]).itertuples():
                rows.append((r.broker, cg, topic, r.msg_id))
        return pd.DataFrame(rows, columns=cols, dtype=object)

    # ---- metrics queries (``m.failover_*``) --------------------------------------------------

    def _offset(self, ms: pd.Series) -> np.ndarray:
        return ms.to_numpy(float) - self.info.run_start

    def groups(self) -> pd.DataFrame:
        """One row per DLedger group: members, leaderships, failovers, the largest term, time
        without a master, sends to an old master, lost, duplicated and re-consumed messages,
        entries truncated."""
        fo, dl = self.failovers, self.t["dledger"]
        no_master = np.where(np.isnan(fo["master"].to_numpy(float)), fo["bound"], fo["master"]) - fo["stopped"]
        out = self.members.groupby("group", sort=True).agg(peers=("peer", "nunique")).reset_index()
        terms = dl.loc[(dl["kind"] == "dledger.role").to_numpy(bool)].groupby("group")["term"].max()
        trunc = dl.loc[(dl["kind"] == "dledger.truncate").to_numpy(bool)].groupby("group")["removed"].sum()
        per = {
            "elections": self.leads.groupby("group").size(), "failovers": fo.groupby("group").size(),
            "max_term": terms, "no_master_ms": pd.Series(no_master.to_numpy(float)).groupby(fo["group"]).sum(),
            "max_no_master_ms": pd.Series(no_master.to_numpy(float)).groupby(fo["group"]).max(),
            "stale_master_sends": self.stale_sends.groupby("group").size(),
            "acked_lost": self.lost.drop_duplicates(["group", "msg_id"]).groupby("group").size(),
            "duplicates": self.duplicates.groupby("group").size(),
            "reconsumed": self.reconsumed.groupby("group").size(), "truncated": trunc}
        for col, series in per.items():
            vals = out["group"].map(series)
            out[col] = vals.fillna(0.0).astype(float) if col.endswith("_ms") else vals.fillna(0).astype(np.int64)
        return out

    def faults(self) -> pd.DataFrame:
        """One row per (group, fault that hit a member of it)."""
        gf = failover.group_faults(self.leads, self.t["faults"], self.members, self.failovers)
        return pd.DataFrame({"group": gf["group"], "fault_id": gf["fault_id"], "fault": gf["fault"],
                             "start_offset_ms": self._offset(gf[START]), "hit": gf["hit"],
                             "failovers": gf["failovers"]})

    def rows(self) -> pd.DataFrame:
        """One row per failover, with its views, sends and messages summed up."""
        fo = self.failovers
        out = fo[["group", "term", "leader", "node", "old_term", "old_leader", "old_node", "fault_id", "fault", "hit"]]
        out = out.assign(stopped_offset_ms=self._offset(fo["stopped"]), elected_offset_ms=self._offset(fo["elected"]),
                         master_offset_ms=self._offset(fo["master"]),
                         election_ms=fo["elected"].to_numpy(float) - fo["stopped"].to_numpy(float),
                         no_master_ms=np.where(np.isnan(fo["master"].to_numpy(float)), fo["bound"], fo["master"])
                         - fo["stopped"].to_numpy(float))
        v = self.views
        for who in ("namesrv", "client"):
            mine = v[(v["who"] == who).to_numpy(bool)]
            out = self._join(out, mine.groupby(_KEY, sort=False)["stale_ms"].max().rename(f"{who}s_stale_ms"), 0.0)
        out = self._join(out, v[v["seen"].isna().to_numpy(bool)].groupby(_KEY, sort=False).size().rename(
            "unseen_views"), 0)
        out = self._join(out, self.stale_sends.groupby(_KEY, sort=False).size().rename("stale_master_sends"), 0)
        out = self._join(out, self.rtos.groupby(_KEY, sort=False)["rto_ms"].max().rename("rto_ms"), 0.0)
        out = self._join(out, self.rtos.groupby(_KEY, sort=False).size().rename("producers_failed"), 0)
        for name, pairs in (("duplicates", self.duplicates), ("reconsumed", self.reconsumed)):
            out = self._join(out, pairs.dropna(subset=["term"]).groupby(_KEY, sort=False).size().rename(name), 0)
        return out.reset_index(drop=True)

    @staticmethod
    def _join(out: pd.DataFrame, per: pd.Series, fill: float) -> pd.DataFrame:
        """``out`` with column ``per.name``: ``per`` by (group, term), ``fill`` where it has none."""
        name = str(per.name)
        if per.empty:
            return out.assign(**{name: np.full(len(out), fill, dtype=type(fill))})
        keys = [tuple(k) for k in per.index.to_list()]
        got = dict(zip(keys, per.to_numpy(), strict=True))
        vals = [got.get((g, t), fill) for g, t in zip(out["group"], out["term"], strict=True)]
        return out.assign(**{name: np.array(vals, dtype=type(fill))})

    def view_rows(self) -> pd.DataFrame:
        v = self.views
        return v.assign(seen_offset_ms=self._offset(v["seen"]))[
            ["group", "term", "who", "node", "by", "seen_offset_ms", "stale_ms"]]

    def rto_rows(self) -> pd.DataFrame:
        r = self.rtos
        return pd.DataFrame({"group": r["group"], "term": r["term"], "producer": r["producer"],
                             "failed_offset_ms": self._offset(r["failed"]),
                             "recovered_offset_ms": self._offset(r["recovered"]), "rto_ms": r["rto_ms"]})

    def stale_master_sends(self) -> pd.DataFrame:
        """``group, term, got, sends``: the sends to an old master by what they got."""
        keys = ["group", "term", "got"]
        return _count(self.stale_sends, keys, "sends").sort_values(keys, kind="stable").reset_index(drop=True)
