"""What every time plot of a run shares (matplotlib, Agg backend): the fault colours and their
shading, the axes (wall seconds below, cluster seconds above), the legend under the plot and the
figure's size, used by :mod:`reports.plots` and :mod:`reports.plots_order`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

from rmqemu.reports.plotdata import PlotData  # noqa: E402

FAULT_COLOURS = ["#e15759", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bcbd22", "#17becf", "#8c564b",
                 "#e377c2", "#7f7f7f"]
DPI = 100


def fault_colour(i: int) -> str:
    """Colour of the ``i``-th fault (in start order); the HTML fault table uses it too."""
    return FAULT_COLOURS[i % len(FAULT_COLOURS)]


def shade_faults(ax: plt.Axes, faults: pd.DataFrame) -> list[Patch]:
    """Shade each fault window, label it at the top; return legend handles."""
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    handles = []
    for i, f in faults.iterrows():
        colour = fault_colour(int(i))
        if f.end_s > f.start_s:
            ax.axvspan(f.start_s, f.end_s, color=colour, alpha=0.18, lw=0, zorder=0)
        ax.axvline(f.start_s, color=colour, lw=1.4, zorder=3)
        ax.text(f.start_s, 0.995, f" {f.fault_id}", transform=trans, va="top", ha="left", fontsize=8,
                color="black", zorder=4, clip_on=True,
                bbox={"facecolor": colour, "alpha": 0.55, "lw": 0, "pad": 1})
        span = f"{f.start_s:.2f}-{f.end_s:.2f} s" if f.end_s > f.start_s else f"at {f.start_s:.2f} s"
        handles.append(Patch(color=colour, alpha=0.6, label=f"{f.fault_id}: {f.fault} {f.targets} ({span})"))
    return handles


def plain(axis: Any) -> None:
    """Log axes labelled 2, 30, 1,000 rather than 2x10^0, 3x10^1, 10^3."""
    fmt = FuncFormatter(lambda v, _: f"{v:,.4g}")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.4g}" if str(f"{v:.4g}")[0] in "25" else ""))


def axes(fig_h: float, data: PlotData) -> tuple[plt.Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=(12, fig_h), dpi=DPI)
    ax.set_xlim(0, max(data.duration_s, 1e-3))
    ax.set_xlabel("wall seconds since the first event")
    top = ax.secondary_xaxis("top", functions=(lambda x: x / data.scale, lambda x: x * data.scale))
    top.set_xlabel(f"cluster seconds (wall / timing.scale {data.scale:g})")
    return fig, ax


def finish(fig: plt.Figure, handles: list[Patch], path: Path, ncol: int = 3, right: float = 0.98) -> None:
    """Legend under the axes (one row per ``ncol`` items), margins computed in inches so
    the plot keeps its size whatever the number of faults."""
    h = fig.get_figheight()
    rows = (len(handles) + ncol - 1) // ncol
    if handles:
        fig.legend(handles=handles, loc="lower left", ncol=ncol, fontsize=8, frameon=False,
                   bbox_to_anchor=(0.01, 0.01))
    fig.subplots_adjust(left=0.14, right=right, top=1 - 0.85 / h, bottom=(0.7 + 0.19 * rows) / h)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def fig_height(lanes: int, legend_items: int) -> float:
    return 1.9 + 0.32 * lanes + 0.19 * ((legend_items + 2) // 3)
