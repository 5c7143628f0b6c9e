"""The order plot (docs/design.md §7 "Order"): one lane per sharding key over the run, coloured by
the queue its sends went to (one colour family per broker, a shade per queue), so a remap shows as
a change of colour; the time bins where an attempt failed crossed in red, the checker's violations
marked where the messages were consumed, the producers' route changes as dashed lines and the
faults shaded as in every time plot (:mod:`reports.plot_axes`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from rmqemu.reports.plot_axes import axes, fig_height, finish, shade_faults  # noqa: E402
from rmqemu.reports.plotdata import PlotData  # noqa: E402

MARKS = {"out_of_order": ("v", "black", "consumed before an earlier message of its key"),
         "duplicate": ("D", "#7b3294", "consumed again (duplicate)")}
PALETTES = ("Blues", "Oranges", "Greens", "Purples", "Reds", "Greys")
#: Queues named in the legend.
MAX_QUEUE_LEGEND = 16


def _natural(name: str) -> list[Any]:
    """``pg-0:10`` after ``pg-0:9``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def queue_colours(queues: list[str]) -> dict[str, Any]:
    """``broker:queue_id`` -> a colour: one palette per broker, a shade per queue of it."""
    by_broker: dict[str, list[str]] = {}
    for q in sorted(queues, key=_natural):
        by_broker.setdefault(q.rsplit(":", 1)[0], []).append(q)
    out = {}
    for i, qs in enumerate(by_broker.values()):
        cmap = plt.get_cmap(PALETTES[i % len(PALETTES)])
        for j, q in enumerate(qs):
            out[q] = cmap(0.45 + 0.45 * j / max(len(qs) - 1, 1))
    return out


def plot_order(data: PlotData, path: Path) -> None:
    """Keys over time coloured by their queue (module docstring)."""
    lanes, marks, failed, changes = data.order_keys, data.order_marks, data.order_failed, data.order_changes
    keys = sorted(set(lanes["key"]) | set(marks["key"]) | set(failed["key"]), key=_natural)
    colour = queue_colours(list(set(lanes["queue"])))
    legend_n = min(len(colour), MAX_QUEUE_LEGEND) + len(MARKS) + 3 + len(data.faults)
    fig, ax = axes(fig_height(max(len(keys), 1), legend_n), data)
    ypos = {k: len(keys) - 1 - i for i, k in enumerate(keys)}
    for key, runs in lanes.groupby("key"):
        ax.broken_barh(list(zip(runs.start_s, runs.end_s - runs.start_s, strict=True)), (ypos[key] - 0.3, 0.6),
                       facecolors=[colour[q] for q in runs.queue], zorder=2)
    ax.scatter(failed.t_s, [ypos[k] for k in failed.key], marker="x", color="#d62728", s=18, lw=1.2, zorder=4)
    for kind, (marker, col, _) in MARKS.items():
        part = marks[marks.violation == kind]
        ax.scatter(part.t_s, [ypos[k] + 0.38 for k in part.key], marker=marker, color=col, s=16, zorder=5)
    for t in sorted(set(changes.t_s)):
        ax.axvline(t, color="#555555", ls="--", lw=0.9, zorder=3)
    if keys:
        counts = marks.groupby("key")["n"].sum()
        ax.set_yticks(list(ypos.values()), [f"{k} ({int(counts.get(k, 0)):,})" for k in ypos])
        ax.set_ylim(-0.7, len(keys) - 0.1)
    else:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "no ordered sends", transform=ax.transAxes, ha="center", va="center", fontsize=12)
    ax.set_title("Sharding keys over time, coloured by the queue they were sent to (label: violations)",
                 fontsize=11, loc="left")
    names = sorted(colour, key=_natural)
    handles: list[Any] = [Patch(color=colour[q], label=q) for q in names[:MAX_QUEUE_LEGEND]]
    if len(names) > MAX_QUEUE_LEGEND:
        handles.append(Patch(color="white", label=f"... {len(names) - MAX_QUEUE_LEGEND} more queues"))
    handles.append(Line2D([], [], marker="x", color="#d62728", ls="", label="an attempt failed (no retry elsewhere)"))
    handles += [Line2D([], [], marker=m, color=c, ls="", label=text) for m, c, text in MARKS.values()]
    handles.append(Line2D([], [], color="#555555", ls="--", label="a producer's route changed"))
    finish(fig, handles + shade_faults(ax, data.faults), path)
