"""The random nemesis: a Jepsen-style fault plan that follows entirely from the seed.

``rmqemu launch FILE --nemesis kill,pause,partition,clock --interval 30s`` runs, like Jepsen's
nemesis generators, a quiet interval, one fault held for an interval, a quiet interval, the next
fault, ... Each fault's kind, targets and magnitudes are drawn from ``random.Random(
f"rmqemu-nemesis-{seed}")``; the specs are then resolved exactly as a topology's ``faults:``
list, so the plan is checked the same way and written to ``plan.json`` the same way. By default
faults never overlap, so every fault's effect (and the convergence after it) can be measured
alone; ``--concurrency N`` starts up to N at once, never two on one node.

With DLedger groups (docs/rocketmq-model.md §8) three more names aim at a group's roles, as
openchaos's leader faults do; each draws one DLedger group, and what it hits is decided when it
fires (:mod:`faults.roles`): ``leader-kill`` kills that group's leader (restarted an interval
later), ``leader-pause`` pauses it for an interval, ``group-partition`` cuts the group with one of
the modes ``leader-alone``, ``leader-minority``, ``leader-majority`` its size allows, for an interval.
The plain kinds never aim at roles, so a seed's plan of them is what it always was.
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from rmqemu.emulator.launcher.fault_spec import FAULT_KINDS, FaultSpec, parse_duration
from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import PlanError
from rmqemu.faults.partition import GROUP_MODES
from rmqemu.faults.roles import dledger_groups, is_role_term, peers_touched
from rmqemu.faults.schedule import Plan, check_plan, fault_rng, resolve_spec, sort_steps

SERVER_ROLES = ("namesrv", "master", "slave")
CLOCK_OFFSETS_S = (5, 30, 60, 130, 300)  # 130 s crosses the namesrv's 120 s broker expiry
STROBE_PERIODS_S = (1, 5, 10)
DRIFT_PPM = (5_000, 50_000, 200_000)
LINK_DELAYS_S = (0.05, 0.5, 2.0, 5.0)  # 5 s crosses the 3 s send timeout
LINK_LOSSES = (0.0, 0.05, 0.3)
ROLE_KINDS = ("leader-kill", "leader-pause", "group-partition")  # aimed at a DLedger group's roles
NEMESIS_KINDS = FAULT_KINDS + ROLE_KINDS
MAX_CONCURRENCY = 16
PLACE_ATTEMPTS = 8  # --concurrency: draws per place before it stays empty (few nodes, wide faults)


def parse_nemesis_kinds(text: str | Iterable[str]) -> list[str]:
    """``"kill,pause,partition,clock"`` -> the list, refusing unknown kinds with the known ones."""
    items = text.split(",") if isinstance(text, str) else list(text)
    kinds = [k.strip() for k in items if k.strip()]
    unknown = [k for k in kinds if k not in NEMESIS_KINDS]
    if unknown or not kinds:
        raise PlanError(f"unknown nemesis kind(s) {', '.join(unknown) or '(none given)'}; "
                        f"expected a comma-separated list of {', '.join(FAULT_KINDS)} "
                        f"(with DLedger groups also {', '.join(ROLE_KINDS)})")
    return list(dict.fromkeys(kinds))


def _server_role(rng: random.Random, nodes: Mapping[str, NodeInfo]) -> str:
    present = [r for r in SERVER_ROLES if any(
        (n.role == "namesrv") if r == "namesrv" else (n.is_master if r == "master" else n.is_slave)
        for n in nodes.values())]
    if not present:
        raise PlanError("the nemesis needs at least one namesrv or broker node")
    return rng.choice(present)


def _partition_modes(n: int) -> list[str]:
    return [m for m, need in (("isolate", 2), ("halves", 2), ("majority", 3), ("bridge", 3),
                              ("majorities-ring", 4)) if n >= need]


def _role_entry(kind: str, hold_s: float, nodes: Mapping[str, NodeInfo], rng: random.Random) -> dict[str, Any]:
    """A fault aimed at the roles of one DLedger group, drawn from ``rng`` (see the module doc)."""
    groups = dledger_groups(nodes)
    if not groups:
        raise PlanError(f"nemesis {kind}: needs a DLedger broker group, and this topology has none")
    group = rng.choice(sorted(groups))
    if kind == "leader-kill":
        return {"kill": f"leader:{group}", "restart_after": hold_s}
    if kind == "leader-pause":
        return {"pause": f"leader:{group}", "duration": hold_s}
    modes = [m for m, (_size, need) in GROUP_MODES.items() if len(groups[group]) >= need]
    return {"partition": rng.choice(modes), "targets": [f"broker:{group}"], "duration": hold_s}


def random_spec(kind: str, at_s: float, hold_s: float, nodes: Mapping[str, NodeInfo],
                rng: random.Random) -> FaultSpec:
    """One fault of ``kind`` at ``at_s`` lasting ``hold_s`` (cluster seconds), drawn from ``rng``."""
    entry: dict[str, Any] = {"at": at_s}
    if kind in ROLE_KINDS:
        entry |= _role_entry(kind, hold_s, nodes, rng)
    elif kind in ("kill", "stop"):
        entry |= {kind: f"one:{_server_role(rng, nodes)}", "restart_after": hold_s}
    elif kind == "pause":
        entry |= {"pause": f"one:{_server_role(rng, nodes)}", "duration": hold_s}
    elif kind == "partition":
        modes = _partition_modes(len(nodes))
        if not modes:
            raise PlanError("the nemesis needs at least 2 nodes to partition")
        mode = rng.choice(modes)
        entry |= {"partition": mode, "duration": hold_s}
        if mode == "isolate":
            entry["targets"] = [f"one:{_server_role(rng, nodes)}"]
        if mode != "majorities-ring" and rng.random() < 0.25:
            entry["oneway"] = True
    elif kind == "link":
        entry |= {"link": f"one:{_server_role(rng, nodes)}", "delay": rng.choice(LINK_DELAYS_S),
                  "duration": hold_s}
        entry["jitter"] = entry["delay"] / 2
        if (loss := rng.choice(LINK_LOSSES)) > 0:
            entry["loss"] = loss
    elif kind == "clock":
        mode = rng.choice(("bump", "strobe", "drift"))
        sign = rng.choice((-1, 1))
        entry |= {"clock": mode, "targets": [f"one:{_server_role(rng, nodes)}"], "duration": hold_s}
        if mode == "bump":
            entry["offset"] = sign * rng.choice(CLOCK_OFFSETS_S)
        elif mode == "strobe":
            entry |= {"offset": sign * rng.choice(CLOCK_OFFSETS_S), "period": rng.choice(STROBE_PERIODS_S)}
        else:
            entry["ppm"] = sign * rng.choice(DRIFT_PPM)
    else:
        raise PlanError(f"unknown nemesis kind {kind!r}; expected one of {', '.join(NEMESIS_KINDS)}")
    try:
        return FaultSpec.model_validate(entry)
    except ValidationError as err:  # a fault entry the topology schema does not take
        raise PlanError(f"nemesis {kind}: {entry}: {err.errors(include_url=False)[0]['msg']}") from None


def random_plan(kinds: str | Iterable[str], interval: Any, duration: Any, nodes: Mapping[str, NodeInfo],
                seed: int, scale: float, concurrency: int = 1) -> Plan:
    """The whole nemesis plan for a run of ``duration`` (cluster time, e.g. ``"240s"``).

    Fault ``k`` starts at ``(2k + 1) * interval`` and is healed one interval later; the last one
    ends at least one interval before the end of the run, so the cluster is seen recovering.
    ``concurrency`` > 1: up to that many faults start together in each fault interval, on
    disjoint nodes (a partition touches every node of its links); a draw that would share a node
    with one already placed is drawn again, a few times, then that place stays empty. With 1
    the draws, and so the plan, are exactly those of a plan without the option.
    """
    kind_list = parse_nemesis_kinds(kinds)
    try:
        interval_s, duration_s = parse_duration(interval), parse_duration(duration)
    except ValueError as err:
        raise PlanError(f"nemesis: {err}") from None
    if interval_s <= 0:
        raise PlanError("nemesis: the interval must be > 0")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise PlanError(f"nemesis: --concurrency must be an integer from 1 to {MAX_CONCURRENCY}, got {concurrency!r}")
    if 3 * interval_s > duration_s:
        raise PlanError(f"nemesis: a run of {duration_s:g}s has no room for a fault with a {interval_s:g}s "
                        f"interval (quiet, fault, quiet needs {3 * interval_s:g}s)")
    pick = random.Random(f"rmqemu-nemesis-{seed}")
    resolve = fault_rng(seed)
    steps = []
    at, k = interval_s, 0
    while at + 2 * interval_s <= duration_s:
        used: set[str] = set()
        for _place in range(concurrency):
            for _attempt in range(1 if concurrency == 1 else PLACE_ATTEMPTS):
                spec = random_spec(pick.choice(kind_list), at, interval_s, nodes, pick)
                drawn = resolve_spec(spec, f"n{k + 1}", nodes, resolve, scale, f"nemesis #{k + 1}")
                touched = _touched(drawn, nodes)
                if concurrency == 1 or not touched & used:
                    k += 1
                    used |= touched
                    steps += drawn
                    break
        at += 2 * interval_s
    origin: dict[str, Any] = {"source": "nemesis", "kinds": kind_list, "interval_s": interval_s}
    if concurrency > 1:
        origin["concurrency"] = concurrency
    plan = Plan(seed, scale, sort_steps(steps), duration_s * 1000.0 * scale, origin)
    check_plan(plan, nodes)
    return plan


def _touched(steps: Iterable[Any], nodes: Mapping[str, NodeInfo]) -> set[str]:
    """The nodes a fault's steps act on: its targets and both ends of every link it cuts or shapes;
    a role term, every peer of its group (which one it hits is decided when it fires)."""
    named = {n for s in steps for n in (*s.targets, *(x for link in s.params.get("links") or [] for x in link))}
    return {n for n in named if not is_role_term(n)} | peers_touched(named, nodes)
