"""The plots' inputs of an analysed run: :class:`PlotData`, from the plot tables the core
computed in the run's Spark task (``p.*``, :mod:`reports.core.plots`).

Every table is aggregated there first (state runs instead of raw pieces, time bins instead of
sends), so what reaches the driver stays small however large the run; the lane plot keeps at
most ``max_lanes`` views per topic and at most ``max_topics`` topics, preferring the stalest,
and says so in :attr:`PlotData.notes`. Times are seconds since the run's first event (wall),
which is what the x axes show.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from rmqemu.reports.results import RunResult


@dataclass
class PlotData:
    """pandas inputs of :mod:`reports.plots` (all times in wall seconds since run start)."""

    scale: float
    duration_s: float
    bin_s: float
    faults: pd.DataFrame          # fault_id, fault, targets, start_s, end_s, has_end
    topics: list[str]             # topics drawn in the lane plot, stalest first
    lanes: pd.DataFrame           # topic, lane, kind (truth/namesrv/client), state, label, start_s, end_s
    misrouted: pd.DataFrame       # t_s, reason, sends
    latency: pd.DataFrame         # t_s, n, p50_ms, p99_ms, max_ms, timeouts
    stale_durations: pd.DataFrame  # duration_ms
    notes: list[str] = field(default_factory=list)
    producers: pd.DataFrame = field(default_factory=pd.DataFrame)  # producer, first_s, last_s, attempts
    unavailable: pd.DataFrame = field(default_factory=pd.DataFrame)  # producer, topic, start_s, end_s
    order_keys: pd.DataFrame = field(default_factory=pd.DataFrame)  # key, queue, start_s, end_s
    order_failed: pd.DataFrame = field(default_factory=pd.DataFrame)  # key, t_s
    order_marks: pd.DataFrame = field(default_factory=pd.DataFrame)  # key, t_s, violation, n
    order_changes: pd.DataFrame = field(default_factory=pd.DataFrame)  # producer, topic, t_s, label
    failover_groups: list[str] = field(default_factory=list)  # DLedger groups drawn, by name
    failover_roles: pd.DataFrame = field(default_factory=pd.DataFrame)  # group, lane, role, start_s, end_s
    failover_masters: pd.DataFrame = field(default_factory=pd.DataFrame)  # group, lane, start_s, end_s
    failover_views: pd.DataFrame = field(default_factory=pd.DataFrame)  # group, lane, kind, start_s, end_s
    failover_elections: pd.DataFrame = field(default_factory=pd.DataFrame)  # group, t_s, label


def assemble(result: RunResult, max_topics: int = 6, max_lanes: int = 24, max_durations: int = 200_000,
             max_windows: int = 100_000, max_groups: int = 6) -> PlotData:
    """:class:`PlotData` of an analysed run (its ``p.*`` tables), with a note for each cut."""
    run, p = result.meta, result.tables
    notes: list[str] = []
    faults = p["p.faults"].sort_values(["start_s", "fault_id"]).reset_index(drop=True)
    ranked = p["p.topics"].assign(_s=p["p.topics"]["s"].fillna(0.0)).sort_values(["_s", "topic"],
                                                                                 ascending=[False, True])
    all_topics = list(ranked["topic"])
    topics = all_topics[:max_topics]
    if len(all_topics) > len(topics):
        notes.append(f"Route plots show the {len(topics)} stalest of {len(all_topics)} topics; "
                     "the Parquet table client_stale_pieces has all of them.")
    counts = p["p.lane_counts"]
    if len(counts) and int(counts["count"].max()) > max_lanes:
        notes.append(f"Route plots show at most {max_lanes} clients per topic (the stalest).")
    durations = p["p.durations"]
    n_int = int(p["p.intervals"]["n"].iloc[0]) if len(p["p.intervals"]) else 0
    if n_int > max_durations:
        durations = durations.sample(n=max_durations, random_state=1) if len(durations) > max_durations else durations
        notes.append(f"The staleness histogram is drawn from a {max_durations:,}-interval sample of {n_int:,}.")
    unavailable = p["p.unavailable"]
    if len(unavailable) > max_windows:
        unavailable = unavailable.iloc[:max_windows]
        notes.append(f"The availability plot shows {max_windows:,} of the unavailability windows "
                     "(metrics.json counts all of them).")
    groups = sorted(set(p["p.failover_roles"]["group"].dropna()))
    if len(groups) > max_groups:
        notes.append(f"Failover plots show {max_groups} of {len(groups)} DLedger groups (the first by name); "
                     "metrics.json has every failover.")
    return PlotData(scale=run.manifest.scale, duration_s=(run.run_end - run.run_start) / 1000.0,
                    bin_s=run.info.bin_ms / 1000.0, faults=faults, topics=topics, lanes=p["p.lanes"],
                    misrouted=p["p.misrouted"], latency=p["p.latency"].sort_values("t_s").reset_index(drop=True),
                    stale_durations=durations, notes=notes, producers=p["p.producers"], unavailable=unavailable,
                    order_keys=p["p.order_keys"], order_failed=p["p.order_failed"], order_marks=p["p.order_marks"],
                    order_changes=p["p.order_changes"], failover_groups=groups[:max_groups],
                    failover_roles=p["p.failover_roles"], failover_masters=p["p.failover_masters"],
                    failover_views=p["p.failover_views"], failover_elections=p["p.failover_elections"])
