"""Checking a plan before it runs: :func:`check_plan`, what the injector would refuse at run time,
found before anything is spawned.

Two faults may not hold one resource (``process``: kill, stop, pause; ``clock``) of a node at
once. A role term (:mod:`faults.roles`: ``leader:broker-a``) hits a peer chosen only when it
fires, so the plan treats it as possibly any peer of its group: a fault on a *named* peer may not
overlap a fault holding the same resource through a role term of that group (the plan cannot
show they would hit different nodes). Two faults through role terms may overlap: the later one
finds the leader of that moment, and a peer the earlier one still holds is left out when it
fires (:mod:`faults.binding`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import PlanError, TargetError
from rmqemu.faults.clients import CLIENT_KINDS, is_client
from rmqemu.faults.kinds import FAULT_CLASSES
from rmqemu.faults.roles import dledger_groups, groups_of, is_role_term

if TYPE_CHECKING:
    from rmqemu.faults.schedule import Plan, PlanStep

HOLDS = {"kill": "process", "stop": "process", "pause": "process", "clock": "clock"}


def resource_of(step: "PlanStep") -> str | None:
    """What the step's fault holds on its nodes (``process`` / ``clock``; a clock reset holds nothing)."""
    return HOLDS.get(step.kind) if step.params.get("mode") != "reset" else None


def _named(step: "PlanStep") -> list[str]:
    """Every node name or term a step mentions: targets, link ends, a partition's groups, a link's ``to``."""
    p = step.params
    groups = [n for g in p.get("groups") or [] for n in g]
    return list(step.targets) + [n for link in p.get("links") or [] for n in link] + groups + list(p.get("to") or [])


def _check_names(step: "PlanStep", where: str, nodes: Mapping[str, NodeInfo] | None) -> None:
    if nodes is None:
        return
    named = _named(step)
    unknown = list(dict.fromkeys(t for t in named if t not in nodes and not is_role_term(t)
                                 and not (step.kind in CLIENT_KINDS and is_client(t))))
    if unknown:
        raise PlanError(f"{where}: unknown node(s) {', '.join(unknown)} (is this plan for another topology?)")
    for term in dict.fromkeys(t for t in named if is_role_term(t)):
        try:
            groups_of(term, nodes)
        except TargetError as err:
            raise PlanError(f"{where}: {err} (is this plan for another topology?)") from None


def _until(plan: "Plan", holder: "PlanStep") -> str:
    ends = any(s.action == "stop" and s.fault_id == holder.fault_id for s in plan.steps)
    return "until it stops" if ends else "and never ends"


def check_plan(plan: "Plan", nodes: Mapping[str, NodeInfo] | None = None) -> None:
    """Refuse a plan whose faults would overlap on a node (see the module doc), steps on unknown
    nodes, groups or faults, and bad kinds. Without ``nodes`` (a ``plan.json`` read alone) the
    names and the overlaps of role terms with named peers are not checked."""
    holders: dict[tuple[str, str], PlanStep] = {}
    by_role: dict[tuple[str, str], list[PlanStep]] = {}  # (DLedger group, resource) -> role-term holders
    started: dict[str, PlanStep] = {}
    group_of = {p: g for g, peers in (dledger_groups(nodes) if nodes else {}).items() for p in peers}
    for step in plan.steps:
        where = f"{step.source + ': ' if step.source else ''}{step.describe()}"
        if step.kind not in FAULT_CLASSES or step.action not in ("start", "stop"):
            raise PlanError(f"{where}: unknown kind or action")
        _check_names(step, where, nodes)
        resource = resource_of(step)
        if step.action == "stop":
            if step.fault_id not in started:
                raise PlanError(f"{where}: stops a fault that has not started")
            holders = {k: v for k, v in holders.items() if v.fault_id != step.fault_id}
            by_role = {k: [s for s in v if s.fault_id != step.fault_id] for k, v in by_role.items()}
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
        roles = [t for t in step.targets if is_role_term(t)]
        groups = {g for t in roles for g in groups_of(t, nodes)} if nodes else set()
        for node in step.targets:
            if is_role_term(node):
                continue
            holder = holders.get((node, resource))
            if holder is not None:
                raise PlanError(f"{where}: {node} is held by {holder.fault_id} ({holder.kind} from "
                                f"{holder.at_ms:g} ms, {holder.source or 'plan'}) {_until(plan, holder)}")
            for role_holder in by_role.get((group_of.get(node, ""), resource), [])[:1]:
                _role_clash(plan, where, node, role_holder, role_holder)
            holders[(node, resource)] = step
        for group in sorted(groups):
            named = [h for (n, r), h in holders.items() if r == resource and group_of.get(n) == group
                     and h.fault_id != step.fault_id]
            for holder in named[:1]:
                _role_clash(plan, where, next(n for n in holder.targets if group_of.get(n) == group), holder, step)
            by_role.setdefault((group, resource), []).append(step)


def _role_clash(plan: "Plan", where: str, peer: str, holder: "PlanStep", aimed: "PlanStep") -> None:
    terms = ",".join(t for t in aimed.targets if is_role_term(t))
    raise PlanError(f"{where}: {peer} may be the peer {aimed.fault_id} ({aimed.kind} {terms}) hits, and "
                    f"{holder.fault_id} ({holder.kind} from {holder.at_ms:g} ms, {holder.source or 'plan'}) holds "
                    f"it {_until(plan, holder)}: a fault on a named peer cannot overlap one on its DLedger "
                    f"group's leader or followers, which is only known when it fires")
