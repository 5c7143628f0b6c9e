"""PNG plots of a run (matplotlib, Agg backend: no display needed).

Every time plot shades each fault's window in its own colour and labels it with its id,
as Jepsen does, so a reader can line a spike up with its cause; the legend under the plot
spells each fault out. The bottom x axis is wall seconds since the run's first event, the
top one the same instants in cluster seconds (wall / ``timing.scale``).

Input is :class:`reports.plotdata.PlotData` (pandas): nothing here touches Spark.
"""
from __future__ import annotations

import multiprocessing
import os
import re
import sys
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

from rmqemu.reports.core.sends import REASONS  # noqa: E402
from rmqemu.reports.plot_axes import DPI, axes, fig_height, finish, plain, shade_faults  # noqa: E402
from rmqemu.reports.plotdata import PlotData  # noqa: E402
from rmqemu.reports.plots_failover import plot_failover  # noqa: E402
from rmqemu.reports.plots_order import plot_order  # noqa: E402

STATE_COLOURS = {"fresh": "#cfe8cf", "over": "#f28e2b", "under": "#4e79a7", "both": "#7b3294"}
STATE_LABELS = {"fresh": "view = truth", "over": "over (view has a broker truth has not)",
                "under": "under (view misses a broker)", "both": "over and under"}
REASON_COLOURS = dict(zip(REASONS, ["#d62728", "#9467bd", "#ff7f0e", "#e377c2", "#8c564b", "#1f77b4", "#2ca02c"],
                          strict=True))


@dataclass(frozen=True)
class Figure:
    """A written plot: file name (relative to the report dir), title, one-line caption."""

    file: str
    title: str
    caption: str


def plot_routes(data: PlotData, topic: str, path: Path) -> None:
    """Lanes: truth (labelled with its broker set), each namesrv's and client's view state."""
    df = data.lanes[data.lanes.topic == topic]
    order = (list(dict.fromkeys(df[df.kind == "truth"].lane)) + sorted(set(df[df.kind == "namesrv"].lane))
             + sorted(set(df[df.kind == "client"].lane)))
    handles_n = len(data.faults) + len(STATE_COLOURS)
    fig, ax = axes(fig_height(len(order), handles_n), data)
    ypos = {lane: len(order) - 1 - i for i, lane in enumerate(order)}
    for lane, grp in df.groupby("lane"):
        y = ypos[lane]
        if lane == "truth":
            for j, seg in enumerate(grp.sort_values("start_s").itertuples()):
                ax.broken_barh([(seg.start_s, seg.end_s - seg.start_s)], (y - 0.3, 0.6),
                               facecolors="#bdbdbd" if j % 2 else "#e0e0e0", edgecolor="white", zorder=2)
                if seg.end_s - seg.start_s > 0.06 * data.duration_s:
                    ax.text((seg.start_s + seg.end_s) / 2, y, seg.label or "(none)", ha="center", va="center",
                            fontsize=7, zorder=3, clip_on=True)
            continue
        for state, part in grp.groupby("state"):
            ax.broken_barh(list(zip(part.start_s, part.end_s - part.start_s, strict=True)), (y - 0.3, 0.6),
                           facecolors=STATE_COLOURS[state], zorder=2)
    held = dict(zip(df[df.kind == "client"].lane, df[df.kind == "client"].label, strict=True))
    ax.set_yticks(list(ypos.values()), [f"{lane}\n{held[lane]}" if held.get(lane) else f"{lane}" for lane in ypos])
    if any(held.values()):  # a proxy's or gRPC client's lane: its name over what it is
        ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(-0.7, len(order) - 0.3)
    ax.set_title(f"Route view vs truth: {topic}", fontsize=11, loc="left")
    handles = [Patch(color=c, label=STATE_LABELS[s]) for s, c in STATE_COLOURS.items()]
    finish(fig, handles + shade_faults(ax, data.faults), path)


def plot_misrouted(data: PlotData, path: Path) -> None:
    """Stacked bars of misrouted sends per time bin, one colour per reason."""
    fig, ax = axes(fig_height(8, len(data.faults) + len(REASONS)), data)
    handles = []
    if len(data.misrouted):
        pivot = data.misrouted.pivot_table(index="t_s", columns="reason", values="sends", aggfunc="sum", fill_value=0)
        bottom = np.zeros(len(pivot))
        for reason in REASONS:
            if reason in pivot:
                ax.bar(pivot.index, pivot[reason], width=data.bin_s, bottom=bottom, color=REASON_COLOURS[reason],
                       zorder=2, align="center")
                bottom += pivot[reason].to_numpy()
                handles.append(Patch(color=REASON_COLOURS[reason], label=f"{reason}: {int(pivot[reason].sum()):,}"))
        ax.set_ylim(0, max(1.0, float(bottom.max())) * 1.15)
    else:
        ax.text(0.5, 0.5, "no misrouted sends", transform=ax.transAxes, ha="center", va="center", fontsize=12)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"misrouted sends per {data.bin_s * 1000:.0f} ms bin")
    ax.set_title("Misrouted sends over time, by reason", fontsize=11, loc="left")
    finish(fig, handles + shade_faults(ax, data.faults), path)


def plot_latency(data: PlotData, path: Path) -> None:
    """p50 / p99 / max send latency per time bin (log y), timeouts as bars on a twin axis."""
    fig, ax = axes(fig_height(8, len(data.faults) + 4), data)
    lat = data.latency
    handles = []
    if len(lat):
        tw = ax.twinx()
        tw.bar(lat.t_s, lat.timeouts, width=data.bin_s, color="#d62728", alpha=0.25, zorder=1)
        tw.set_ylabel("timeouts per bin")
        tw.set_ylim(0, max(1, lat.timeouts.max()) * 3)
        tw.yaxis.set_major_locator(MaxNLocator(integer=True))
        for col, colour, label in (("p50_ms", "#4e79a7", "p50"), ("p99_ms", "#f28e2b", "p99"),
                                   ("max_ms", "#555555", "max")):
            ax.plot(lat.t_s, lat[col].clip(lower=0.01), color=colour, lw=1.4, marker=".", ms=3, zorder=3)
            handles.append(Patch(color=colour, label=f"{label} latency"))
        handles.append(Patch(color="#d62728", alpha=0.25, label=f"timeouts: {int(lat.timeouts.sum()):,}"))
        ax.set_yscale("log")
        plain(ax.yaxis)
    else:
        ax.text(0.5, 0.5, "no sends with a latency", transform=ax.transAxes, ha="center", va="center", fontsize=12)
    ax.set_ylabel(f"send latency, wall ms\n(1 wall ms = {1 / data.scale / 1000:g} cluster s)")
    ax.set_title("Send latency over time", fontsize=11, loc="left")
    finish(fig, handles + shade_faults(ax, data.faults), path, right=0.93)


def plot_staleness(data: PlotData, path: Path) -> None:
    """Histogram (log-spaced bins) of client stale interval durations."""
    d = data.stale_durations.duration_ms.to_numpy() if len(data.stale_durations) else np.array([])
    d = d[d > 0]
    fig, ax = plt.subplots(figsize=(12, 3.8), dpi=DPI)
    if len(d):
        lo, hi = np.log10(d.min()), np.log10(d.max())
        bins = np.logspace(lo - 0.05, hi + 0.05, max(10, min(40, int((hi - lo) * 10) + 2)))
        ax.hist(d, bins=bins, color="#f28e2b", edgecolor="white")
        ax.set_xscale("log")
        plain(ax.xaxis)
        for q, style in ((50, "--"), (99, ":")):
            v = float(np.percentile(d, q))
            ax.axvline(v, color="black", ls=style, lw=1)
            ax.text(v, 0.97, f" p{q} {v:,.0f} ms\n ({v / 1000 / data.scale:,.4g} cluster s)",
                    transform=blended_transform_factory(ax.transData, ax.transAxes), va="top", fontsize=8)
        top = ax.secondary_xaxis("top", functions=(lambda x: x / 1000 / data.scale, lambda x: x * 1000 * data.scale))
        top.set_xlabel("cluster seconds")
        plain(top.xaxis)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.text(0.5, 0.5, "no client was ever stale", transform=ax.transAxes, ha="center", va="center", fontsize=12)
    ax.set_xlabel("duration of a client stale interval, wall ms")
    ax.set_ylabel("stale intervals")
    ax.set_title(f"Staleness distribution ({len(d):,} client stale intervals)", fontsize=11, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def plot_availability(data: PlotData, path: Path, max_lanes: int = 30) -> None:
    """One lane per producer: grey from its first to its last attempt of the measured run,
    red where one of its (producer, topic) pairs was unavailable (docs/design.md §9: attempts
    made and none ok); the faults shaded. At most ``max_lanes`` producers, the longest
    unavailable first."""
    win, spans = data.unavailable, data.producers
    lost = (win.assign(d=win.end_s - win.start_s).groupby("producer").d.sum() if len(win)
            else pd.Series(dtype=float))
    names = sorted(spans.producer if len(spans) else [], key=lambda n: (-float(lost.get(n, 0.0)), n))
    shown = sorted(names[:max_lanes])
    fig, ax = axes(fig_height(max(len(shown), 1), len(data.faults) + 2), data)
    ypos = {name: len(shown) - 1 - i for i, name in enumerate(shown)}
    for row in spans.itertuples():
        if row.producer in ypos:
            ax.broken_barh([(row.first_s, max(row.last_s - row.first_s, 1e-9))], (ypos[row.producer] - 0.12, 0.24),
                           facecolors="#bdbdbd", zorder=2)
    for name, grp in (win.groupby("producer") if len(win) else []):
        if name in ypos:
            ax.broken_barh(list(zip(grp.start_s, grp.end_s - grp.start_s, strict=True)), (ypos[name] - 0.3, 0.6),
                           facecolors="#d62728", alpha=0.85, zorder=3)
    if shown:
        ax.set_yticks(list(ypos.values()),
                      [f"{n} ({float(lost.get(n, 0.0)) * 1000:,.0f} ms)" for n in ypos])
        ax.set_ylim(-0.7, len(shown) - 0.3)
    else:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "no send attempts", transform=ax.transAxes, ha="center", va="center", fontsize=12)
    more = f" ({len(shown)} of {len(names)} producers)" if len(names) > len(shown) else ""
    ax.set_title(f"Producer availability{more}", fontsize=11, loc="left")
    handles = [Patch(color="#bdbdbd", label="making attempts"),
               Patch(color="#d62728", label="unavailable: attempts to a topic, none ok (label: total wall ms)")]
    finish(fig, handles + shade_faults(ax, data.faults), path)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]


@contextmanager
def drawing_pool(workers: int) -> Iterator[Executor | None]:
    """Up to ``workers`` processes (no more than the cores) to draw plots in, forked from this
    one, which has matplotlib imported and the plot data; None, to draw in this process, for one
    worker or where processes are not forked (not Linux)."""
    n = min(workers, os.cpu_count() or 1)
    if n <= 1 or not sys.platform.startswith("linux"):
        yield None
        return
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
        yield pool


def render_all(data: PlotData, out_dir: Path, pool: Executor | None = None) -> list[Figure]:
    """Write every plot as PNG into ``out_dir``; return them in report order. With ``pool`` (of
    processes: matplotlib draws under the GIL, so threads would take turns), the plots are drawn
    in it at once; a plot that failed raises here."""
    jobs: list[tuple[Any, tuple[Any, ...], Figure]] = []
    for topic in data.topics:
        name = f"routes-{_safe(topic)}.png"
        jobs.append((plot_routes, (data, topic), Figure(
            name, f"Route view vs truth: {topic}",
            "Top lane: truth (brokers whose master is alive, not paused and hosts the topic). "
            "Other lanes: each namesrv's and client's view, coloured by how it differs from truth.")))
    jobs += [
        (plot_misrouted, (data,), Figure("misrouted.png", "Misrouted sends over time",
                                         "Send attempts whose target was dead, paused, partitioned, a DLedger "
                                         "member that was not the master, a slave, without the topic, or given "
                                         "a bad queue id (first matching reason).")),
        (plot_latency, (data,), Figure("latency.png", "Send latency over time",
                                       "Per time bin: median, 99th percentile and maximum latency of send attempts; "
                                       "red bars count timeouts.")),
        (plot_availability, (data,), Figure(
            "availability.png", "Producer availability",
            "Per producer: red where, for one of its topics, it made attempts and none was ok "
            "(an unavailability window, from a failed attempt to the next ok one or the measured end).")),
    ]
    if len(data.order_keys):
        jobs.append((plot_order, (data,), Figure(
            "order.png", "Ordered sends: keys over time",
            "One lane per sharding key (those with the most violations first), coloured by the queue "
            "its sends went to: a change of colour is a remap. Red outline: an attempt failed; "
            "marks: where the order checker found a violation; dashed: a producer's route changed.")))
    for i, group in enumerate(data.failover_groups):
        jobs.append((plot_failover, (data, group), Figure(
            f"failover-{i}-{_safe(group)}.png", f"DLedger group {group}: leader and route views over time",
            "One band per peer, coloured by its role (blank while down), black where its broker was the master; "
            "below, each namesrv's and client's route, red while it still held a failover's old master "
            "(docs/design.md §7 \"DLedger failovers\"); dashed: elections.")))
    jobs.append((plot_staleness, (data,), Figure(
        "staleness.png", "Staleness distribution",
        "How long each client stale interval (view != truth, maximal) lasted.")))
    if pool is None:
        for draw, args, fig in jobs:
            draw(*args, out_dir / fig.file)
    else:
        for done in [pool.submit(draw, *args, out_dir / fig.file) for draw, args, fig in jobs]:
            done.result()
    return [fig for _, _, fig in jobs]
