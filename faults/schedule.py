"""Fault plans: plain data, built from a topology's ``faults:`` list and written to ``plan.json``.

A plan is a list of timed steps with everything resolved — concrete node names, the blocked links
of each partition, offsets in wall ms — so running it needs no randomness and ``plan.json`` alone
replays a run (``rmqemu launch --replay RUN_DIR``). Specs are resolved in list order with one RNG
derived from the run's seed (``random.Random(f"rmqemu-faults-{seed}")``): the fault plan does not
shift when the workload draws more or fewer random numbers, and the same seed gives the same plan.

Times: specs are in cluster seconds, steps in wall ms from the start of the run
(``wall_ms = cluster_s * 1000 * scale``).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import FaultError, PlanError
from rmqemu.faults.clients import (
    CLIENT_KINDS,
    ConnectedClients,
    is_client,
    link_fault_links,
    partition_links,
    pick_targets,
    servers,
)
from rmqemu.faults.kinds import FAULT_CLASSES
from rmqemu.faults.partition import plan_partition

PLAN_VERSION = 1
HOLDS = {"kill": "process", "stop": "process", "pause": "process", "clock": "clock"}


@dataclass(frozen=True)
class PlanStep:
    """Start or stop one fault at ``at_ms`` (wall ms after the run started)."""

    at_ms: float
    action: str  # "start" | "stop" (a kill/stop with restart_after restarts on "stop")
    fault_id: str
    kind: str
    targets: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # where it came from, for messages: "faults[2]", "nemesis"

    def describe(self) -> str:
        return f"{self.action} {self.fault_id} ({self.kind} {','.join(self.targets)}) at {self.at_ms:g} ms"


@dataclass(frozen=True)
class Plan:
    seed: int
    scale: float
    steps: tuple[PlanStep, ...]
    duration_ms: float | None = None
    origin: dict[str, Any] = field(default_factory=dict)
    version: int = PLAN_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for step in data["steps"]:
            step["targets"] = list(step["targets"])
        return data

    def to_json(self) -> str:
        """Stable text: sorted keys, indented, trailing newline (same plan -> same bytes)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> "Plan":
        try:
            if data.get("version") != PLAN_VERSION:
                raise PlanError(f"plan version {data.get('version')!r} is not supported (expected {PLAN_VERSION})")
            steps = tuple(
                PlanStep(float(s["at_ms"]), str(s["action"]), str(s["fault_id"]), str(s["kind"]),
                         tuple(str(t) for t in s["targets"]), dict(s.get("params") or {}), str(s.get("source", "")))
                for s in data["steps"])
            duration = data.get("duration_ms")
            return cls(int(data["seed"]), float(data["scale"]), steps,
                       None if duration is None else float(duration), dict(data.get("origin") or {}))
        except PlanError:
            raise
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise PlanError(f"malformed plan: {err!r}") from None


def write_plan(plan: Plan, path: str | Path) -> Path:
    """Write ``plan.json`` (before the plan starts, so a crashed run can still be replayed)."""
    p = Path(path)
    p.write_text(plan.to_json(), encoding="utf-8")
    return p


def read_plan(path: str | Path) -> Plan:
    """Read a plan written by :func:`write_plan`; a directory means ``DIR/plan.json``."""
    p = Path(path)
    if p.is_dir():
        p = p / "plan.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"no fault plan at {p}") from None
    except json.JSONDecodeError as err:
        raise PlanError(f"{p} is not valid JSON: {err}") from None
    plan = Plan.from_dict(data)
    check_plan(plan)
    return plan


def fault_rng(seed: int) -> random.Random:
    return random.Random(f"rmqemu-faults-{seed}")


def _wall(seconds: float | None, scale: float) -> float | None:
    return None if seconds is None else seconds * 1000.0 * scale


def _order(names: Iterable[str], nodes: Mapping[str, NodeInfo]) -> tuple[str, ...]:
    """Node-table order, then the real clients named (``client@<pid>``) in the order given."""
    wanted = list(dict.fromkeys(names))
    return tuple(n for n in nodes if n in wanted) + tuple(n for n in wanted if n not in nodes and is_client(n))


def _links_of(spec: FaultSpec, nodes: Mapping[str, NodeInfo], rng: random.Random,
              clients: ConnectedClients | None) -> tuple[list[str], list[list[str]]]:
    """A link fault's sources and directed links: ``link`` -> ``to`` (every other node by
    default, never a real client unless named), and back again unless ``oneway``; a real
    client's links are the ones a node can shape (:func:`faults.clients.link_fault_links`)."""
    src = pick_targets(spec.link or [], nodes, rng, clients, "link")
    dst = pick_targets(spec.to, nodes, rng, clients, "link") if spec.to else list(nodes)
    links = {(s, d) for s in src for d in dst if s != d}
    if not spec.oneway:
        links |= {(d, s) for s, d in links}
    if not links:
        raise PlanError(f"link {','.join(src)} -> {','.join(dst)} covers no link between two different nodes")
    return src, [list(link) for link in link_fault_links(sorted(links), nodes)]


def resolve_spec(spec: FaultSpec, fault_id: str, nodes: Mapping[str, NodeInfo], rng: random.Random,
                 scale: float, source: str = "", clients: ConnectedClients | None = None) -> list[PlanStep]:
    """The start (and stop) steps of one spec, with targets, links and offsets resolved.
    ``clients``: the real clients connected now (a partition or link may name them)."""
    at = _wall(spec.at, scale) or 0.0
    kind, params = spec.kind, {}

    def pick(expr: Any) -> list[str]:
        return pick_targets(expr, nodes, rng, clients, kind)
    try:
        if kind in ("kill", "stop", "pause"):
            targets = tuple(pick(getattr(spec, kind)))
            if kind != "pause":
                params = {"restart_after_ms": _wall(spec.restart_after, scale)}
        elif kind == "partition":
            mode = spec.partition or ""
            if mode == "groups":
                groups = [pick(g) for g in spec.groups or []]
                part = plan_partition(mode, list(nodes), groups=groups, oneway=spec.oneway)
            elif mode == "isolate":  # real clients alone are cut off from the namesrvs and brokers
                chosen = pick(spec.targets or ["one"])
                named = [c for c in chosen if c not in nodes]
                pool = (servers(nodes) if len(named) == len(chosen) else list(nodes)) + named
                part = plan_partition(mode, pool, targets=chosen, oneway=spec.oneway)
            else:
                members = pick(spec.targets or ["all"])
                part = plan_partition(mode, members, oneway=spec.oneway, rng=rng)
            # an isolate names the nodes cut off (the other side is "everyone else": in groups)
            targets = (_order(chosen, nodes) if mode == "isolate"
                       else _order((n for g in part.groups for n in g), nodes))
            params = {"mode": mode, "oneway": part.oneway,
                      "links": [list(link) for link in partition_links(part.links, nodes)],
                      "groups": [list(g) for g in part.groups]}
        elif kind == "link":
            src, links = _links_of(spec, nodes, rng, clients)
            targets = tuple(src)
            params = {"links": links, "delay_ms": _wall(spec.delay, scale) or 0.0,
                      "jitter_ms": _wall(spec.jitter, scale) or 0.0, "loss": spec.loss or 0.0,
                      "duplicate": spec.duplicate or 0.0}
        else:
            targets = tuple(pick(spec.targets or ["one"]))
            offset = _wall(spec.offset, scale) or 0.0
            params = {"mode": spec.clock, "offset_ms": offset if spec.clock == "bump" else 0.0,
                      "strobe_delta_ms": offset if spec.clock == "strobe" else 0.0,
                      "strobe_period_ms": _wall(spec.period, scale) or 0.0, "drift_ppm": spec.ppm or 0.0}
    except FaultError as err:
        raise PlanError(f"{source or fault_id} ({spec.describe()}): {err}") from None
    steps = [PlanStep(at, "start", fault_id, kind, targets, params, source)]
    end = spec.restart_after if kind in ("kill", "stop") else spec.duration
    if end is not None:
        steps.append(PlanStep(at + (_wall(end, scale) or 0.0), "stop", fault_id, kind, targets, {}, source))
    return steps


def sort_steps(steps: Iterable[PlanStep]) -> tuple[PlanStep, ...]:
    """By time; at one instant, stops of faults started earlier come first (a fault ending at t
    frees its nodes for one starting at t), then starts, then stops of faults that start at that
    same instant (``restart_after: 0``); otherwise in the order given."""
    indexed = list(enumerate(steps))
    started_at = {st.fault_id: st.at_ms for _, st in indexed if st.action == "start"}

    def rank(step: PlanStep) -> int:
        if step.action == "start":
            return 1
        return 2 if started_at.get(step.fault_id) == step.at_ms else 0

    indexed.sort(key=lambda p: (p[1].at_ms, rank(p[1]), p[0]))
    return tuple(step for _, step in indexed)


def check_plan(plan: Plan, nodes: Mapping[str, NodeInfo] | None = None) -> None:
    """Refuse a plan whose faults would overlap on a node (what the injector would refuse at run
    time, found before anything is spawned), steps on unknown nodes or faults, and bad kinds."""
    holders: dict[tuple[str, str], PlanStep] = {}
    started: dict[str, PlanStep] = {}
    for step in plan.steps:
        where = f"{step.source + ': ' if step.source else ''}{step.describe()}"
        if step.kind not in FAULT_CLASSES or step.action not in ("start", "stop"):
            raise PlanError(f"{where}: unknown kind or action")
        named = list(step.targets) + [n for link in step.params.get("links") or [] for n in link]
        unknown = list(dict.fromkeys(t for t in named if nodes is not None and t not in nodes
                                     and not (step.kind in CLIENT_KINDS and is_client(t))))
        if unknown:
            raise PlanError(f"{where}: unknown node(s) {', '.join(unknown)} (is this plan for another topology?)")
        resource = HOLDS.get(step.kind) if step.params.get("mode") != "reset" else None
        if step.action == "stop":
            if step.fault_id not in started:
                raise PlanError(f"{where}: stops a fault that has not started")
            holders = {k: v for k, v in holders.items() if v.fault_id != step.fault_id}
            continue
        if step.fault_id in started:
            raise PlanError(f"{where}: fault id {step.fault_id} starts twice")
        started[step.fault_id] = step
        if step.kind == "clock" and step.params.get("mode") == "reset":  # ends the whole holding faults,
            ended = {v.fault_id for k, v in holders.items()   # as the injector does at run time
                     if k[1] == "clock" and k[0] in step.targets}
            holders = {k: v for k, v in holders.items() if v.fault_id not in ended}
        if resource is None:
            continue
        for node in step.targets:
            holder = holders.get((node, resource))
            if holder is not None:
                until = "and never ends" if not any(s.action == "stop" and s.fault_id == holder.fault_id
                                                     for s in plan.steps) else "until it stops"
                raise PlanError(f"{where}: {node} is held by {holder.fault_id} ({holder.kind} from "
                                f"{holder.at_ms:g} ms, {holder.source or 'plan'}) {until}")
            holders[(node, resource)] = step


def spec_problems(specs: Sequence[FaultSpec], nodes: Mapping[str, NodeInfo], seed: int, scale: float,
                  duration_s: float | None = None) -> list[str]:
    """Every problem of a ``faults:`` list, one line each, for ``rmqemu validate``: each entry is
    resolved on its own (so one bad target does not hide the next), then the whole plan is
    checked for overlaps once every entry resolves."""
    rng = fault_rng(seed)
    problems: list[str] = []
    steps: list[PlanStep] = []
    for i, spec in enumerate(specs):
        where = f"faults[{i}] ({spec.describe()})"
        if duration_s is not None and spec.at > duration_s:
            problems.append(f"{where}: starts after the end of the run ({duration_s:g}s)")
            continue
        try:
            steps += resolve_spec(spec, f"f{i + 1}", nodes, rng, scale, f"faults[{i}]")
        except FaultError as err:
            text = str(err)
            problems.append(text if text.startswith(f"faults[{i}]") else f"{where}: {text}")
    try:  # overlaps among the entries that resolved
        check_plan(Plan(seed, scale, sort_steps(steps), _wall(duration_s, scale), {"source": "topology"}), nodes)
    except FaultError as err:
        problems.append(str(err))
    return problems


def plan_from_specs(specs: Sequence[FaultSpec], nodes: Mapping[str, NodeInfo], seed: int, scale: float,
                    duration_s: float | None = None, origin: dict[str, Any] | None = None) -> Plan:
    """Resolve a topology's ``faults:`` list into a checked plan; fault ``faults[i]`` is ``f{i+1}``."""
    rng = fault_rng(seed)
    steps: list[PlanStep] = []
    for i, spec in enumerate(specs):
        if duration_s is not None and spec.at > duration_s:
            raise PlanError(f"faults[{i}] ({spec.describe()}): starts after the end of the run ({duration_s:g}s)")
        steps += resolve_spec(spec, f"f{i + 1}", nodes, rng, scale, f"faults[{i}]")
    plan = Plan(seed, scale, sort_steps(steps), _wall(duration_s, scale), origin or {"source": "topology"})
    check_plan(plan, nodes)
    return plan
