"""The failover plot of a DLedger group (docs/design.md §7 "DLedger failovers"): one band per peer
coloured by its member's role (leader, follower, candidate; blank while the node was down) with a
black bar where its broker was the master (brokerId 0), then one lane per namesrv and client, red
while its route still had the old master after a failover; each election a dashed line labelled
with its term and leader, the faults shaded as in every time plot (:mod:`reports.plot_axes`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

from rmqemu.reports.plot_axes import axes, fig_height, finish, shade_faults  # noqa: E402
from rmqemu.reports.plotdata import PlotData  # noqa: E402

ROLE_COLOURS = {"LEADER": "#2ca02c", "FOLLOWER": "#9ecae1", "CANDIDATE": "#fdae6b"}
STALE = "#d62728"


def _bars(ax: Any, y: float, rows: Any, height: float, colour: str, zorder: int = 2) -> None:
    spans = [(r.start_s, max(r.end_s - r.start_s, 1e-9)) for r in rows.itertuples()]
    if spans:
        ax.broken_barh(spans, (y - height / 2, height), facecolors=colour, zorder=zorder)


def plot_failover(data: PlotData, group: str, path: Path) -> None:
    """The group's peers' roles, its masters and the views behind them (module docstring)."""
    roles = data.failover_roles[data.failover_roles.group == group]
    masters = data.failover_masters[data.failover_masters.group == group]
    views = data.failover_views[data.failover_views.group == group]
    elections = data.failover_elections[data.failover_elections.group == group]
    peers = sorted(set(roles.lane) | set(masters.lane))
    names = sorted(set(views[views.kind == "namesrv"].lane))
    clients = sorted(set(views[views.kind == "client"].lane))
    order = [*peers, *names, *clients]
    fig, ax = axes(fig_height(max(len(order), 1), len(data.faults) + len(ROLE_COLOURS) + 3), data)
    ypos = {lane: len(order) - 1 - i for i, lane in enumerate(order)}
    for lane in peers:
        for role, colour in ROLE_COLOURS.items():
            _bars(ax, ypos[lane], roles[(roles.lane == lane) & (roles.role == role)], 0.6, colour)
        _bars(ax, ypos[lane], masters[masters.lane == lane], 0.14, "black", 3)
    for lane in (*names, *clients):
        ax.axhline(ypos[lane], color="#dddddd", lw=0.8, zorder=1)
        _bars(ax, ypos[lane], views[views.lane == lane], 0.5, STALE)
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for e in elections.itertuples():
        ax.axvline(e.t_s, color="#555555", ls="--", lw=0.9, zorder=3)
        ax.text(e.t_s, 0.02, f" {e.label}", transform=trans, fontsize=7, rotation=90, va="bottom", clip_on=True)
    labels = [*peers, *(f"{n} (namesrv)" for n in names), *(f"{c} (client)" for c in clients)]
    if order:
        ax.set_yticks(list(ypos.values()), labels)
        ax.set_ylim(-0.7, len(order) - 0.3)
    ax.set_title(f"DLedger group {group}: its leader over time, and the route views left on an old master",
                 fontsize=11, loc="left")
    handles: list[Any] = [Patch(color=c, label=r.lower()) for r, c in ROLE_COLOURS.items()]
    handles += [Line2D([], [], color="black", lw=3, label="its broker is the master (brokerId 0)"),
                Patch(color=STALE, label="route view still on the old master"),
                Line2D([], [], color="#555555", ls="--", label="an election (term: leader)")]
    finish(fig, handles + shade_faults(ax, data.faults), path)
