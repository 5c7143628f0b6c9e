"""Fault plans: plain data, built from a topology's ``faults:`` list and written to ``plan.json``.

A plan is a list of timed steps with everything resolved — concrete node names, the blocked links
of each partition, offsets in wall ms — so running it needs no randomness and ``plan.json`` alone
replays a run (``rmqemu launch --replay RUN_DIR``). The one exception is what only the running
cluster knows: a DLedger group's leader. A role term (``leader:broker-a``) or a group partition
mode stays symbolic in its step, with a ``note`` saying so, and is bound when the step fires
(:mod:`faults.role_plan`, :mod:`faults.binding`); a replay binds it again, to the leader of then.

Specs are resolved in list order with one RNG derived from the run's seed
(``random.Random(f"rmqemu-faults-{seed}")``): the fault plan does not shift when the workload
draws more or fewer random numbers, and the same seed gives the same plan.

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
from rmqemu.errors import FaultError, PlanError, TargetError
from rmqemu.faults.clients import (
    ConnectedClients,
    is_client,
    link_fault_links,
    partition_links,
    pick_targets,
    servers,
    terms_of,
)
from rmqemu.faults.partition import GROUP_MODES, plan_partition
from rmqemu.faults.plan_check import check_plan
from rmqemu.faults.role_plan import (
    check_field,
    fire_note,
    group_partition,
    has_roles,
    role_partition,
    target_fields,
)
from rmqemu.faults.roles import split_roles

PLAN_VERSION = 1


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
    note: str = ""  # what is decided only when it fires (faults.role_plan.fire_note); "" for most steps

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
            if not step["note"]:
                del step["note"]  # a plan without role terms reads as it always did
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
                         tuple(str(t) for t in s["targets"]), dict(s.get("params") or {}), str(s.get("source", "")),
                         str(s.get("note", "")))
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
    """The start (and stop) steps of one spec, with targets, links and offsets resolved, except
    role terms and group modes (:mod:`faults.role_plan`); a bad role term is named by its field
    (``faults[2].kill: ...``). ``clients``: the real clients connected now (a partition or link may name them)."""
    at = _wall(spec.at, scale) or 0.0
    kind, params = spec.kind, {}
    for path, terms in target_fields(spec):
        try:
            check_field(spec, path, terms, nodes)
        except TargetError as err:
            raise PlanError(f"{source or fault_id}.{path}: {err}") from None

    def pick(expr: Any) -> list[str]:
        """Node terms drawn now, with the seeded RNG; role terms after them, kept as written."""
        plain, roles = split_roles(terms_of(expr))
        return (pick_targets(plain, nodes, rng, clients, kind) if plain or not roles else []) + roles
    try:
        if kind in ("kill", "stop", "pause"):
            targets = tuple(pick(getattr(spec, kind)))
            if kind != "pause":
                params = {"restart_after_ms": _wall(spec.restart_after, scale)}
        elif kind == "partition" and spec.partition in GROUP_MODES:
            targets, params = group_partition(spec, nodes, rng)
        elif kind == "partition" and has_roles(spec.targets, *(spec.groups or [])):
            targets, params = role_partition(spec, nodes, pick)
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
            if has_roles(spec.link, spec.to):  # the links are drawn when it fires, between the nodes then
                src, links = pick(spec.link), []
                params = {"oneway": spec.oneway, **({"to": pick(spec.to)} if spec.to else {})}
            else:
                src, links = _links_of(spec, nodes, rng, clients)
            targets = tuple(src)
            params = {**params, "links": links, "delay_ms": _wall(spec.delay, scale) or 0.0,
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
    note = fire_note(kind, targets, params, nodes)
    steps = [PlanStep(at, "start", fault_id, kind, targets, params, source, note)]
    end = spec.restart_after if kind in ("kill", "stop") else spec.duration
    if end is not None:
        steps.append(PlanStep(at + (_wall(end, scale) or 0.0), "stop", fault_id, kind, targets, {}, source,
                              "ends what its start hit" if note else ""))
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
