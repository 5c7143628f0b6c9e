"""DLedger failovers of one run (docs/design.md §7 "DLedger failovers"): who led each broker group
when, each failover (a leadership after the group's first) with the fault behind it, when the old
leader stopped leading, when the new one was elected and when its broker took brokerId 0.

Everything here is read from a run's few lines (:data:`DLEDGER_KINDS`, step 1 of
:mod:`reports.core.analysis`): one line per role change of a member, one per broker role change,
one per namesrv table change. The failovers of a group are sequential, so they are found by a
plain loop over its (few) leaderships.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core.intervals import END, START, from_change_points, num

#: The kinds step 1 reads for this section: the members' roles and truncations, the brokers' role
#: changes and the namesrvs' table changes.
DLEDGER_KINDS: tuple[str, ...] = ("dledger.role", "dledger.truncate", "broker.role", "ns.broker")
#: The columns those lines add to the ones step 1 already reads (``addr``, ``remoting_addr``: of
#: ``node.start``, a node's addresses).
DLEDGER_COLUMNS: tuple[str, ...] = ("peer", "term", "leader", "removed", "broker_addr", "change", "addr",
                                    "remoting_addr")
#: The columns of :func:`lines`.
LINE_COLUMNS: tuple[str, ...] = ("kind", "node", "ts", "seq", "group", "peer", "term", "role", "leader", "removed",
                                 "broker", "broker_id", "broker_addr", "change")
#: Fault kinds that end a fault rather than make one: never the cause of a failover.
HEALING_FAULTS: tuple[str, ...] = ("restart", "resume")
LEADER = "LEADER"

FAILOVER_COLUMNS: tuple[str, ...] = (
    "group", "term", "leader", "node", "old_term", "old_leader", "old_node", "fault_id", "fault", "hit",
    "stopped", "elected", "master", "bound")


def lines(ev: pd.DataFrame) -> pd.DataFrame:
    """The lines of :data:`DLEDGER_KINDS`, :data:`LINE_COLUMNS`, in (ts, seq) order."""
    out = ev.loc[ev["kind"].isin(DLEDGER_KINDS).to_numpy(bool), list(LINE_COLUMNS)]
    return out.sort_values(["ts", "seq"], kind="stable").reset_index(drop=True)


def addresses(ev: pd.DataFrame, manifest_nodes: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """``addr, node``: every address a node had (the manifest's ``addr`` and ``remoting_addr``, and
    those of its ``node.start`` lines), so a send's ``broker_addr`` names the node it went to."""
    rows = [(info.get(key), name) for name, info in manifest_nodes.items() for key in ("addr", "remoting_addr")]
    starts = ev.loc[(ev["kind"] == "node.start").to_numpy(bool)]
    for key in ("addr", "remoting_addr"):
        rows += list(zip(starts[key], starts["node"], strict=True))
    out = pd.DataFrame(rows, columns=["addr", "node"], dtype=object)
    out = out[out["addr"].map(lambda a: isinstance(a, str)) & out["node"].map(lambda n: isinstance(n, str))]
    return out.drop_duplicates().reset_index(drop=True)


def peers(dl: pd.DataFrame) -> pd.DataFrame:
    """``group, peer, node``: the members of each group, from their own lines."""
    mine = dl.loc[dl["kind"].isin(("dledger.role", "dledger.truncate")).to_numpy(bool), ["group", "peer", "node"]]
    return mine.dropna().drop_duplicates().sort_values(["group", "peer", "node"]).reset_index(drop=True)


def leaderships(dl: pd.DataFrame, exits: pd.DataFrame, run_end: float | None) -> pd.DataFrame:
    """``group, peer, node, term, start, end``: a member's ``LEADER`` line until its next
    ``dledger.role`` line or its ``node.exit``, else the run end; by group, then start."""
    roles = dl.loc[(dl["kind"] == "dledger.role").to_numpy(bool), ["node", "ts", "seq", "group", "peer", "term",
                                                                   "role"]].dropna(subset=["node"])
    stops = exits.dropna(subset=["node"])
    stops = stops[stops["node"].isin(roles["node"]).to_numpy(bool)]
    both = pd.concat([roles.assign(_exit=False), stops.assign(_exit=True)], ignore_index=True)
    iv = from_change_points(both, ["node"], run_end)
    lead = iv[~iv["_exit"].to_numpy(bool) & (iv["role"] == LEADER).fillna(False).to_numpy(bool)]
    lead = lead.dropna(subset=["group"])[["group", "peer", "node", "term", START, END]]
    return lead.sort_values(["group", START, "node"], kind="stable").reset_index(drop=True)


def _targets(value: Any) -> set[str]:
    return {t for t in value if isinstance(t, str)} if isinstance(value, (tuple, list, np.ndarray)) else set()


def _causes(faults: pd.DataFrame) -> pd.DataFrame:
    """The faults that can cause a failover (not a restart or a resume), by start."""
    keep = ~faults["fault"].isin(HEALING_FAULTS).to_numpy(bool) & faults["fault_id"].notna().to_numpy(bool)
    return faults.loc[keep, ["fault_id", "fault", "targets", START]].sort_values(START, kind="stable")


def _cause(causes: pd.DataFrame, lo: float, hi: float, leader: str, members: set[str]) -> tuple[Any, ...]:
    """``(fault_id, fault, start, hit)`` of the fault behind a failover whose old leadership began
    at ``lo`` and whose election was at ``hi``: the latest one in ``[lo, hi]`` that hit the old
    leader, else the latest that hit a member; ``(None, None, nan, None)`` when none did."""
    span = causes[(causes[START].to_numpy(float) >= lo) & (causes[START].to_numpy(float) <= hi)]
    hits = [_targets(t) for t in span["targets"]]
    for who, wanted in (("leader", {leader}), ("follower", members)):
        at = [i for i, h in enumerate(hits) if h & wanted]
        if at:
            row = span.iloc[at[-1]]
            return row["fault_id"], row["fault"], float(row[START]), who
    return None, None, np.nan, None


def failovers(leads: pd.DataFrame, dl: pd.DataFrame, faults: pd.DataFrame, members: pd.DataFrame,
              measure_end: float) -> pd.DataFrame:
    """:data:`FAILOVER_COLUMNS`: one row per leadership of a group after its first (by start).
    ``stopped``: the old leadership's end, or the start of its fault when that hit the old leader,
    never after the election; ``elected``: the new leadership's start; ``master``: the new
    leader's first ``broker.role`` with broker_id 0 of its term (or without one) from the election
    on, before ``bound``, the next failover's ``stopped`` (else ``measure_end``); NaN if none."""
    causes = _causes(faults)
    rows = []
    for group, mine in leads.groupby("group", sort=True):
        nodes = set(members.loc[(members["group"] == group).to_numpy(bool), "node"])
        for old, new in zip(mine.iloc[:-1].itertuples(), mine.iloc[1:].itertuples(), strict=True):
            fid, fault, f_start, hit = _cause(causes, old.start, new.start, old.node, nodes)
            stopped = min(old.end, new.start, f_start if hit == "leader" else np.inf)
            rows.append((group, new.term, new.peer, new.node, old.term, old.peer, old.node, fid, fault, hit,
                         stopped, new.start))
    out = pd.DataFrame(rows, columns=list(FAILOVER_COLUMNS[:-2]))
    out = out.astype({"stopped": float, "elected": float})
    nxt = out.groupby("group", sort=False)["stopped"].shift(-1).to_numpy(float)
    out["bound"] = np.fmax(np.where(np.isnan(nxt), num(measure_end), nxt), out["stopped"].to_numpy(float))
    out["master"] = _masters(out, dl)
    return out[list(FAILOVER_COLUMNS)].reset_index(drop=True)


def _masters(fo: pd.DataFrame, dl: pd.DataFrame) -> np.ndarray:
    """Per failover: when the new leader's broker took brokerId 0 (see :func:`failovers`)."""
    br = dl.loc[(dl["kind"] == "broker.role").to_numpy(bool) & (dl["broker_id"] == 0).fillna(False).to_numpy(bool)]
    out = np.full(len(fo), np.nan)
    for i, f in enumerate(fo.itertuples()):
        t = br["ts"].to_numpy(float)
        term_ok = br["term"].isna().to_numpy(bool) | (br["term"] == f.term).fillna(False).to_numpy(bool)
        hit = (br["node"] == f.node).fillna(False).to_numpy(bool) & term_ok & (t >= f.elected) & (t < f.bound)
        if hit.any():
            out[i] = t[hit].min()
    return out


def master_intervals(dl: pd.DataFrame, exits: pd.DataFrame, fo: pd.DataFrame, members: pd.DataFrame,
                     run_end: float | None) -> pd.DataFrame:
    """``node, start, end``: a member's broker was the master: from its ``broker.role`` with
    broker_id 0 until its next ``broker.role``, its ``node.exit`` or the ``stopped`` of a failover
    it was the old leader of, whichever comes first (else the run end). What the misrouting reason
    ``stale_master`` looks a send's target up in (docs/design.md §7 "Misrouted sends")."""
    br = dl.loc[(dl["kind"] == "broker.role").to_numpy(bool) & dl["node"].isin(members["node"]).to_numpy(bool),
                ["node", "ts", "seq", "broker_id"]]
    stops = exits.dropna(subset=["node"])
    stops = stops[stops["node"].isin(br["node"]).to_numpy(bool)]
    both = pd.concat([br.assign(_exit=False), stops.assign(_exit=True)], ignore_index=True)
    iv = from_change_points(both, ["node"], run_end)
    iv = iv[~iv["_exit"].to_numpy(bool) & (iv["broker_id"] == 0).fillna(False).to_numpy(bool)]
    end = iv[END].to_numpy(float).copy()
    for node, stopped in zip(fo["old_node"], fo["stopped"].to_numpy(float), strict=True):
        cut = (iv["node"] == node).to_numpy(bool) & (iv[START].to_numpy(float) < stopped) & (stopped < end)
        end[cut] = stopped
    out = iv[["node", START]].assign(end=end)
    return out[out[END].to_numpy(float) > out[START].to_numpy(float)].reset_index(drop=True)


def truth_tables(ev: pd.DataFrame, manifest_nodes: Mapping[str, Mapping[str, Any]], exits: pd.DataFrame,
                 faults: pd.DataFrame, run_end: float | None, measure_end: float) -> dict[str, pd.DataFrame]:
    """Step 1's tables of this section: ``dledger`` (:func:`lines`), ``addresses``,
    ``dledger_members`` (:func:`peers`), ``leaderships``, ``failovers`` and ``dledger_masters``
    (:func:`master_intervals`)."""
    dl = lines(ev)
    members = peers(dl)
    leads = leaderships(dl, exits, run_end)
    fo = failovers(leads, dl, faults, members, measure_end)
    return {"dledger": dl, "addresses": addresses(ev, manifest_nodes), "dledger_members": members,
            "leaderships": leads, "failovers": fo, "dledger_masters": master_intervals(dl, exits, fo, members, run_end)}


def group_faults(leads: pd.DataFrame, faults: pd.DataFrame, members: pd.DataFrame,
                 fo: pd.DataFrame) -> pd.DataFrame:
    """``group, fault_id, fault, start, hit, failovers``: each fault (not a restart or resume) that
    hit a member of a group: ``leader`` when its targets hold the group's latest leader to start at
    or before it, else ``follower``; ``failovers``: those attributed to it."""
    rows = []
    for f in _causes(faults).itertuples():
        hit = _targets(f.targets)
        for group, nodes in members.groupby("group", sort=True)["node"]:
            if not hit & set(nodes):
                continue
            before = leads[(leads["group"] == group).to_numpy(bool) & (leads[START].to_numpy(float) <= f.start)]
            who = "leader" if len(before) and before["node"].iloc[-1] in hit else "follower"
            n = int(((fo["group"] == group) & (fo["fault_id"] == f.fault_id)).fillna(False).sum())
            rows.append((group, f.fault_id, f.fault, f.start, who, n))
    out = pd.DataFrame(rows, columns=["group", "fault_id", "fault", START, "hit", "failovers"])
    return out.astype({START: float, "failovers": np.int64})
