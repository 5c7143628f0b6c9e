"""The timing-health rule of docs/design.md §9, shared by the launcher's live check and the report.

A compressed run measures RocketMQ only while each node's timers fire close to schedule. The
route metrics rest on the shortest of these periods: the namesrv's broker scan (10 s, fixed in
RocketMQ), the clients' route poll (``pollNameServerInterval``, 30 s) and heartbeat
(``heartbeatBrokerInterval``, 30 s); the brokers' registration (``registerNameServerPeriod``) is
clamped to 10-60 s by RocketMQ, so it is never shorter than the scan. A timer late by ``L`` wall ms
shifts every interval measured
from it by ``L / scale`` cluster ms; keeping the p99 lateness below 5 % of the shortest period
(``0.05 * P * scale`` wall ms, 5 ms at 0.01 with defaults) keeps that error below 5 % of the
finest interval the report resolves. Since lateness is a property of the host (wall ms), not of
the scale, ``scale * lag / threshold`` keeps up even if the lateness stayed as it is. That is an
upper bound, not an estimate: an overloaded host also falls less behind at a larger scale (its
nodes do less per wall second). Measured here: the 56-node topology at 0.01 ran its namesrv's
timers ~1-2.7 s late (suggesting 2.2-5.5), yet kept up at 0.05.

A node's lateness over a run is its *second-worst* window: one window over the threshold is
tolerated, and a node with a single window has no verdict yet. Why: a single window holds the transient of a process
start on a 2-core host (the node's own imports and first run of every timer, or another node
being spawned or restarted by a fault), measured at 5-9 ms p99 in a default chaos-quickstart run
whose other windows all stayed at 1-3 ms; an overloaded host is late in every window (the
56-node topology at 0.01: namesrv answers up to 1.3 s late throughout), so two windows over the
threshold still flag it, within about two wall seconds.

An overloaded host can also miss a control command's deadline (the launcher waits 5 s for a node
to acknowledge a link table or a clock): :func:`explains_missed_ack` says when a node's own
lateness accounts for that, and :func:`capacity_scale` the scale at which a cluster fits the
host (docs/design.md §9, "Overload").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

LAG_FRACTION = 0.05
NAMESRV_SCAN_MS = 10000.0
#: The configurable periods the route metrics rest on, with RocketMQ's defaults (cluster ms).
PERIOD_KEYS: dict[str, float] = {
    "pollNameServerInterval": 30000.0,
    "heartbeatBrokerInterval": 30000.0,
}


def shortest_period_ms(configs: Iterable[Mapping[str, Any]]) -> float:
    """The shortest relevant period in cluster ms over the nodes' configs (the scan at most)."""
    shortest = NAMESRV_SCAN_MS
    for config in configs:
        for key in PERIOD_KEYS:
            value = config.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                shortest = min(shortest, float(value))
    return shortest


#: A node's ``node.lag`` window (emulator/node/lag.py): one summary per wall second at most: the
#: launcher's live check needs fresh numbers every second or so, and a second at scale 0.01 is 100
#: cluster s, longer than every protocol period the metrics rest on (10 s scan, 30 s
#: poll/heartbeat/register), so each window holds firings of every periodic timer. At scale 1 a
#: window is 10 cluster s instead (:func:`window_ms`).
MIN_WINDOW_WALL_MS = 1000.0
WINDOW_CLUSTER_MS = 10000.0


def window_ms(scale: float) -> float:
    """A ``node.lag`` window in wall ms: ``max(1 wall s, 10 cluster s)``."""
    return max(MIN_WINDOW_WALL_MS, WINDOW_CLUSTER_MS * scale)


TOLERATED_WINDOWS = 1  # per node: the transient of a process start, see the module docstring


def run_lateness(window_p99s: Iterable[float]) -> float | None:
    """A node's lateness over a run from its windows' p99 (wall ms, pauses already left out): the
    largest once :data:`TOLERATED_WINDOWS` windows are set aside; None while it has no more
    windows than that (no verdict yet)."""
    ranked = sorted(window_p99s, reverse=True)
    return ranked[TOLERATED_WINDOWS] if len(ranked) > TOLERATED_WINDOWS else None


def too_short_for_verdict(measured_ms: float, scale: float) -> bool:
    """Whether a run measured for ``measured_ms`` wall ms (from ``run.start``, every node up) was
    shorter than the windows a node's lateness needs (:func:`run_lateness`: more than
    :data:`TOLERATED_WINDOWS`, each beginning after ``run.start``). A node's windows run from its
    own start, so its first begins before ``run.start`` and is left out: a 5 s run at scale 1
    (10 s windows) has one ``node.lag`` line per node, written as it stops, and none counts."""
    return measured_ms < (TOLERATED_WINDOWS + 1) * window_ms(scale)


def threshold_ms(scale: float, shortest_ms: float = NAMESRV_SCAN_MS) -> float:
    """The p99 lateness (wall ms) a healthy node stays below."""
    return LAG_FRACTION * shortest_ms * scale


def suggested_scale(scale: float, lag_ms: float, threshold: float) -> float:
    """The largest scale at which ``lag_ms`` of lateness stays within the threshold, rounded up
    to two significant digits (lateness is the host's, so it stays ``lag_ms`` at any scale)."""
    if lag_ms <= threshold or threshold <= 0:
        return scale
    return _two_digits_up(scale * lag_ms / threshold)


#: The host's capacity, measured by bench/capacity.py (bench/README.md, "Capacity"): the CPU one
#: node costs, as a fraction of a core times timing.scale (its periodic and per-message work both
#: come 1/scale as often; a node of the 16-node capacity shape at 0.05 used about 3.5 % of a core,
#: 0.035 x 0.05), and the share of the host's cores a cluster may take and still keep its timers
#: (headroom for the launcher, the OS and timer jitter). Sweeps budget their runs by the same two.
NODE_CPU_X_SCALE = 0.00175
CPU_BUDGET = 0.6


def cores_needed(nodes: int, scale: float) -> float:
    """The host cores ``nodes`` nodes keep busy at ``scale``, by the measured cost per node."""
    return nodes * NODE_CPU_X_SCALE / max(scale, 1e-6)


def capacity_scale(nodes: int, cores: int) -> float:
    """The smallest scale at which ``nodes`` nodes fit in :data:`CPU_BUDGET` of ``cores``,
    rounded up to two significant digits: 56 nodes on 2 cores need 0.082 (measured there: healthy
    at the edge at 0.05, far behind at 0.01)."""
    return _two_digits_up(nodes * NODE_CPU_X_SCALE / (max(cores, 1) * CPU_BUDGET))


#: A node whose latest node.lag window ran its timers at least this fraction of a control
#: command's ack timeout late was too far behind to answer in time; half, because a saturated
#: node's latest window is as old as its lateness, which grows meanwhile (docs/design.md §9,
#: "Overload", has the measurements).
ACK_LATE_FRACTION = 0.5


def explains_missed_ack(lag_ms: float, timeout_ms: float) -> bool:
    """Whether a node whose timers ran ``lag_ms`` late was too far behind to ack within ``timeout_ms``."""
    return lag_ms >= ACK_LATE_FRACTION * timeout_ms


def _two_digits_up(raw: float) -> float:
    """``raw`` rounded up to two significant digits (0.08167 -> 0.082)."""
    digits = 1 - math.floor(math.log10(raw))
    return math.ceil(raw * 10 ** digits) / 10 ** digits
