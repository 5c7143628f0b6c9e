"""Whether nodes missed a control command's deadline because the host cannot keep up
(docs/design.md §9, "Overload", is the rule and its measurements).

A node's loop handles control commands between its timers and messages, so on a host that cannot
keep up with the cluster at its scale a command waits behind the node's backlog, and a missed
ack reads like a broken control plane. :func:`diagnose` reads the latest ``node.lag`` window of
each node that missed it (outside its pauses; start-up windows count, since the launcher pushes
link tables as nodes come up) and, when every one of them ran at least
:data:`rmqemu.timing.ACK_LATE_FRACTION` of the deadline late, says what happened: the host cannot
keep up, which nodes, how late, and a scale at which the cluster fits the host. Otherwise (a node
without windows, or not that late: a hung node, a control-plane fault) it says nothing and the
launcher reports the missed ack as it is.

Only this failure path reads files: the tail of the named nodes' event files and ``faults.jsonl``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqemu import jsonlines, timing
from rmqemu.emulator.launcher.lagwatch import add_pauses, in_pause
from rmqemu.errors import ControlError, ControlTimeout, HostOverloaded

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher

#: How much of a node's event file is read for its newest node.lag line: a window of a saturated
#: node lasts seconds, and a producer at 0.01 writes tens of kB of sends a second meanwhile.
TAIL_BYTES = 1 << 20
SHOWN = 6  # nodes named in the message; the rest are counted


def latest_lag(path: Path, pauses: Iterable[tuple[float, float]] = ()) -> float | None:
    """The ``p99_ms`` of the newest ``node.lag`` window in the event file ``path`` that overlaps
    none of ``pauses``; None without one (or without the file)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read()
    except OSError:
        return None
    if size > TAIL_BYTES:  # the first line read is a piece of one
        data = data[data.find(b"\n") + 1:]
    spans = list(pauses)
    for e in reversed(jsonlines.parse(data[:jsonlines.complete_length(data)], b'"node.lag"').records):
        if e.get("kind") == "node.lag" and isinstance(e.get("p99_ms"), (int, float)) and not in_pause(e, spans):
            return float(e["p99_ms"])
    return None


def overloaded(cluster: "Launcher", failed: Sequence[ControlError]) -> HostOverloaded | None:
    """What the launcher raises when control commands failed (``failed``): HostOverloaded when
    every failure is a missed deadline (a refusal is not the host's fault) that the node's own
    lateness explains, else None, and the failures are reported as they are."""
    missed = [e for e in failed if isinstance(e, ControlTimeout)]
    if len(missed) < len(failed) or cluster.run_dir_deleted():
        return None
    return diagnose(cluster.run_dir, missed, scale=cluster.scale, nodes=len(cluster.plans),
                    configs=[p.config for p in cluster.plans.values()])


def diagnose(run_dir: Path, missed: Sequence[ControlTimeout], *, scale: float,
             configs: Iterable[Mapping[str, Any]], nodes: int, cores: int | None = None) -> HostOverloaded | None:
    """The overload error for the nodes that missed a deadline (``missed``), or None when their
    lateness does not explain it. ``nodes``: the cluster's node processes; ``cores``: the host's
    (default: this one's)."""
    if not missed:
        return None
    pauses: dict[str, list[tuple[float, float]]] = {}
    try:
        add_pauses(pauses, jsonlines.records(run_dir / "faults.jsonl", b'"fault.'))
    except OSError:
        pass  # no fault has run yet
    late: dict[str, float] = {}
    for miss in missed:
        lag = latest_lag(run_dir / "events" / f"{miss.node}.jsonl", pauses.get(miss.node, []))
        if lag is None or not timing.explains_missed_ack(lag, miss.timeout_ms):
            return None
        late[miss.node] = lag
    return HostOverloaded(message(late, missed[0].command, max(m.timeout_ms for m in missed), scale=scale,
                                  configs=configs, nodes=nodes, cores=cores or os.cpu_count() or 1), late)


def message(late: Mapping[str, float], command: str, timeout_ms: float, *, scale: float,
            configs: Iterable[Mapping[str, Any]], nodes: int, cores: int) -> str:
    """The overload error's text: the true cause first, then the nodes that missed the deadline
    and how late they were, then a scale to try: where the cluster fits the host by the CPU a node
    costs (:func:`rmqemu.timing.capacity_scale`), or, when it should already fit (something else
    takes the host), the lateness's upper bound (:func:`rmqemu.timing.suggested_scale`); why not
    always the latter: docs/design.md §9, "Overload"."""
    threshold = timing.threshold_ms(scale, timing.shortest_period_ms(configs))
    named = sorted(late, key=lambda n: -late[n])
    who = _and(named[:SHOWN] + ([f"{len(named) - SHOWN} more"] if len(named) > SHOWN else []))
    lags = _and([f"{late[n]:.0f}" for n in named[:SHOWN]])
    whose = "its" if len(named) == 1 else "their"
    text = (f"the host cannot keep up with {nodes} nodes at timing.scale {scale:g}: {who} did not answer the "
            f"launcher's {command!r} within {timeout_ms:.0f} ms; {whose} timers ran {lags} ms late (p99 of "
            f"the latest node.lag window; healthy is below {threshold:.3g} ms); ")
    fit = timing.capacity_scale(nodes, cores)
    if fit > scale:
        budget = f"{timing.CPU_BUDGET * 100:.0f} %"
        return (text + f"try timing.scale >= {fit:g}, where {nodes} nodes take at most {budget} of "
                f"this host's {cores} cores by the CPU a node costs (bench/README.md, \"Capacity\"), or fewer nodes "
                f"(docs/design.md §9, \"Overload\")")
    upper = timing.suggested_scale(scale, late[named[0]], threshold)
    return (text + f"{nodes} nodes at this scale should need about {timing.cores_needed(nodes, scale):.1f} of this "
            f"host's {cores} cores, so something else is using them: free the host, or try timing.scale >= "
            f"{upper:g} (an upper bound: it keeps up even at this lateness; docs/design.md §9, \"Overload\")")


def _and(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
