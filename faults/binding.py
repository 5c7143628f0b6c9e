"""Binding a step decided when it fires: role terms and group modes -> a concrete step. Pure.

:mod:`faults.firing` calls :func:`bind_step` at the moment a start step fires, with the leaders
the cluster reports then and what the active faults hold; the result is the step as a plan
without role terms would have held it (node names, blocked links, groups), from which the fault
is built, so ``fault.start`` records the nodes actually hit. The stop step is never bound: it
ends the active fault, i.e. what the start hit.

What cannot be hit is not an error, as a refused signal is not (``params.refused``):

- a role term of a group without a leader now binds nothing (``refused["leader:broker-a"]``);
- for a fault that holds a resource (kill, stop, pause, clock), a peer a role term picked that an
  active fault already holds (or, for kill, stop and pause, that an earlier fault left down) is
  left out (``refused["broker-a-n1"]``): two faults aimed at roles may overlap in a plan
  (:mod:`faults.plan_check`), and the later one takes what is free;
- if nothing is left to hit, there is no step (:attr:`Binding.why` says why) and the step is
  skipped; the interpreter records it as ``fault.error``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import FaultError
from rmqemu.faults.clients import is_client, link_fault_links, partition_links
from rmqemu.faults.partition import GROUP_MODES, plan_leader_partition, plan_partition
from rmqemu.faults.plan_check import resource_of
from rmqemu.faults.roles import Leaders, bind_roles, groups_of, is_role_term
from rmqemu.faults.schedule import PlanStep

Held = Callable[[str], "str | None"]  # node -> why the fault cannot take it now (None: free)
LINK_PARAMS = ("delay_ms", "jitter_ms", "loss", "duplicate")


@dataclass(frozen=True)
class Binding:
    """A bound step, or why there is none; ``refused``: each term or node not hit, and why."""

    step: PlanStep | None
    refused: dict[str, str] = field(default_factory=dict)
    why: str = ""


def needs_binding(step: PlanStep) -> bool:
    """Whether a step names a role term or uses a group mode (its ``note`` says so too)."""
    return step.params.get("mode") in GROUP_MODES or any(is_role_term(t) for t in _terms(step))


def _terms(step: PlanStep) -> list[str]:
    p = step.params
    return [*step.targets, *(t for g in p.get("groups") or [] for t in g), *(p.get("to") or [])]


def groups_asked(step: PlanStep, nodes: Mapping[str, NodeInfo]) -> list[str]:
    """The DLedger groups whose leader the step needs, in first-mention order."""
    if step.params.get("mode") in GROUP_MODES:
        return [str(nodes[step.targets[0]].broker)]
    return list(dict.fromkeys(g for t in _terms(step) if is_role_term(t) for g in groups_of(t, nodes)))


def bind_step(step: PlanStep, nodes: Mapping[str, NodeInfo], leaders: Leaders, held: Held) -> Binding:
    """The concrete step of ``step`` with these leaders (see the module doc)."""
    try:
        if step.params.get("mode") in GROUP_MODES:
            return _group_mode(step, nodes, leaders)
        refused: dict[str, str] = {}
        targets = _bind(step.targets, step, nodes, leaders, held, refused)
        if not targets:
            return _nothing(refused)
        if step.kind == "partition":
            return _partition(step, targets, nodes, leaders, refused)
        if step.kind == "link":
            return _link(step, targets, nodes, leaders, refused)
        return Binding(replace(step, targets=tuple(targets), note=""), refused)
    except FaultError as err:  # the bound nodes make no partition or link (e.g. too few nodes left)
        return Binding(None, {}, str(err))


def _bind(terms: Sequence[str], step: PlanStep, nodes: Mapping[str, NodeInfo], leaders: Leaders,
          held: Held, refused: dict[str, str]) -> list[str]:
    """Bind role terms; leave out the peers they picked that ``held`` says the fault cannot take."""
    names, missing = bind_roles(terms, nodes, leaders)
    refused.update(missing)
    if resource_of(step) is None:
        return names
    out = []
    for name in names:
        why = None if name in terms else held(name)  # a named node was checked with the plan
        if why is None:
            out.append(name)
        else:
            refused[name] = why
    return out


def _nothing(refused: Mapping[str, str], what: str = "") -> Binding:
    reasons = "; ".join(f"{k}: {v}" for k, v in refused.items()) or "no node"
    return Binding(None, dict(refused), f"nothing to hit{what}: {reasons}")


def _group_mode(step: PlanStep, nodes: Mapping[str, NodeInfo], leaders: Leaders) -> Binding:
    group = groups_asked(step, nodes)[0]
    leader = leaders.get(group)
    if leader is None:
        return _nothing({f"leader:{group}": f"{group} has no DLedger leader now (an election is under way?)"})
    p = step.params
    part = plan_leader_partition(p["mode"], p["peers"], leader, bool(p.get("oneway")))
    params = {"mode": part.mode, "oneway": part.oneway, "groups": part.groups,
              "links": [list(link) for link in partition_links(part.links, nodes)]}
    return Binding(replace(step, params=params, note=""))


def _partition(step: PlanStep, targets: list[str], nodes: Mapping[str, NodeInfo], leaders: Leaders,
               refused: dict[str, str]) -> Binding:
    p = step.params
    oneway = bool(p.get("oneway"))
    if p["mode"] == "isolate":
        pool = list(nodes) + [t for t in targets if is_client(t)]
        part = plan_partition("isolate", pool, targets=targets, oneway=oneway)
    else:
        groups = []
        for i, group in enumerate(p["groups"]):
            bound = _bind(group, step, nodes, leaders, lambda _n: None, refused)
            if not bound:
                return _nothing(refused, f" in groups[{i}] ({','.join(group)})")
            groups.append(bound)
        part = plan_partition("groups", list(nodes), groups=groups, oneway=oneway)
        targets = [n for g in part.groups for n in g]
    params = {"mode": p["mode"], "oneway": oneway, "groups": [list(g) for g in part.groups],
              "links": [list(link) for link in partition_links(part.links, nodes)]}
    return Binding(replace(step, targets=tuple(targets), params=params, note=""), refused)


def _link(step: PlanStep, src: list[str], nodes: Mapping[str, NodeInfo], leaders: Leaders,
          refused: dict[str, str]) -> Binding:
    p = step.params
    dst = _bind(p["to"], step, nodes, leaders, lambda _n: None, refused) if p.get("to") else list(nodes)
    links = {(s, d) for s in src for d in dst if s != d}
    if not p.get("oneway"):
        links |= {(d, s) for s, d in links}
    if not links:
        return _nothing(refused, f" between {','.join(src)} and {','.join(dst) or 'no node'}")
    params: dict[str, Any] = {"links": [list(link) for link in link_fault_links(sorted(links), nodes)],
                              **{k: p[k] for k in LINK_PARAMS if k in p}}
    return Binding(replace(step, targets=tuple(src), params=params, note=""), refused)
