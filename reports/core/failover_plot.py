"""The small tables the failover plot draws (:mod:`reports.plots_failover`), from one run's
:class:`~reports.core.failover_run.FailoverRun`: per DLedger group, each member's role over time
(a band per peer) and when its broker was the master, then the namesrvs' and clients' route views
while the moving master had left them behind, and the elections. Times are wall seconds since the
run's first event; at most :data:`~reports.core.failover_run.MAX_CLIENTS` client lanes a group,
the stalest.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqemu.reports.core.failover_run import MAX_CLIENTS, FailoverRun
from rmqemu.reports.core.intervals import END, START, from_change_points


def _intervals(lines: pd.DataFrame, exits: pd.DataFrame, run_end: float) -> pd.DataFrame:
    """Each of ``lines`` (``node, ts, seq, ...``) until the node's next line or exit, else the run end."""
    stops = exits.dropna(subset=["node"])
    stops = stops[stops["node"].isin(lines["node"]).to_numpy(bool)]
    both = pd.concat([lines.assign(_exit=False), stops.assign(_exit=True)], ignore_index=True)
    iv = from_change_points(both, ["node"], run_end)
    return iv[~iv["_exit"].to_numpy(bool)].reset_index(drop=True)


def plot_tables(run: FailoverRun) -> dict[str, pd.DataFrame]:
    """``p.failover_roles`` (group, lane, role, start_s, end_s: each member's role, lane
    ``peer (node)``), ``p.failover_masters`` (group, lane, start_s, end_s: its broker had brokerId
    0), ``p.failover_views`` (group, lane, kind, start_s, end_s: a namesrv's or client's view
    behind a failover's new master) and ``p.failover_elections`` (group, t_s, label)."""
    t0, end, dl, exits = run.info.run_start, run.info.run_end, run.t["dledger"], run.t["exits"]
    lane = {(g, n): f"{p} ({n})" for g, p, n in run.members.itertuples(index=False)}

    def secs(ms: pd.Series) -> np.ndarray:
        return (ms.to_numpy(float) - t0) / 1000.0

    roles = _intervals(dl.loc[(dl["kind"] == "dledger.role").to_numpy(bool), ["node", "ts", "seq", "group", "role"]]
                       .dropna(subset=["node", "group"]), exits, end)
    broker = dl.loc[(dl["kind"] == "broker.role").to_numpy(bool), ["node", "ts", "seq", "broker_id"]].dropna(
        subset=["node"])
    masters = _intervals(broker, exits, end)
    masters = masters[(masters["broker_id"] == 0).fillna(False).to_numpy(bool)]
    group_of = {n: g for (g, n) in lane}
    masters = masters[masters["node"].isin(group_of).to_numpy(bool)]
    v = run.views
    v = v.assign(rank=v.groupby(["group", "who", "node"], sort=False)["stale_ms"].transform("sum"))
    clients = v[(v["who"] == "client").to_numpy(bool)].drop_duplicates(["group", "node"])
    keep = clients.sort_values(["group", "rank", "node"], ascending=[True, False, True]).groupby("group").head(
        MAX_CLIENTS)
    shown = (v["who"] == "namesrv").to_numpy(bool) | v.set_index(["group", "node"]).index.isin(
        keep.set_index(["group", "node"]).index)
    fo = run.failovers.reset_index(drop=True)
    v = v[shown].merge(fo[["group", "term", "stopped", "bound"]], on=["group", "term"])
    stale_end = np.where(v["seen"].isna().to_numpy(bool), v["bound"].to_numpy(float), v["seen"].to_numpy(float))
    return {
        "p.failover_roles": pd.DataFrame({
            "group": roles["group"].to_numpy(object),
            "lane": [lane.get((g, n), n) for g, n in zip(roles["group"], roles["node"], strict=True)],
            "role": roles["role"].to_numpy(object), "start_s": secs(roles[START]), "end_s": secs(roles[END])}),
        "p.failover_masters": pd.DataFrame({
            "group": [group_of[n] for n in masters["node"]],
            "lane": [lane[(group_of[n], n)] for n in masters["node"]],
            "start_s": secs(masters[START]), "end_s": secs(masters[END])}),
        "p.failover_views": pd.DataFrame({
            "group": v["group"].to_numpy(object), "lane": v["node"].to_numpy(object), "kind": v["who"].to_numpy(object),
            "start_s": secs(v["stopped"]), "end_s": (stale_end - t0) / 1000.0}),
        "p.failover_elections": pd.DataFrame({
            "group": fo["group"].to_numpy(object), "t_s": secs(fo["elected"]),
            "label": [f"term {t}: {p}" for t, p in zip(fo["term"], fo["leader"], strict=True)]}),
    }
