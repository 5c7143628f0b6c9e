"""The plan side of faults decided when they fire: role terms and the group partition modes.

A plan step built from a spec that names a role term (:mod:`faults.roles`) or uses a group
partition mode (``leader-alone``, ``leader-minority``, ``leader-majority``) keeps what cannot be known
yet in its plain data, and :mod:`faults.binding` turns it into a concrete step when it fires:

- kill, stop, pause, clock: ``targets`` holds the node names resolved now (node-table order) and
  then the role terms as written;
- partition ``isolate`` / ``groups`` with a role term: ``targets`` and ``params.groups`` hold the
  terms (an isolate's one group is the nodes to cut off), ``params.links`` is empty;
- link with a role term (in ``link`` or ``to``): ``targets`` is the sources, ``params.to`` the
  destinations (absent: every other node), ``params.oneway`` as written, ``params.links`` empty;
- a group mode: ``targets`` is the group's peers, ``params.peers`` the same peers in an order
  drawn now from the plan's RNG (the leader's side is filled from it), ``links`` / ``groups`` empty.

Each such step carries a ``note`` saying so, which ``plan.json`` (and ``rmqemu plan``) shows.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Mapping

from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import PartitionError, TargetError
from rmqemu.faults.clients import terms_of
from rmqemu.faults.partition import GROUP_MODES
from rmqemu.faults.roles import (
    check_role_terms,
    dledger_groups,
    is_role_term,
    mentions_role,
    peers_touched,
)
from rmqemu.faults.targets import SELECTORS, resolve_targets

Pick = Callable[[Any], list[str]]
TARGET_FIELDS = ("kill", "stop", "pause", "link", "to", "targets")


def target_fields(spec: FaultSpec) -> list[tuple[str, list[str]]]:
    """The spec's target expressions by field path (``kill``, ``to``, ``groups[1]``, ...); a group
    mode's ``targets`` is listed even when absent (it is required)."""
    out = [(k, terms_of(getattr(spec, k))) for k in TARGET_FIELDS if getattr(spec, k) is not None]
    if spec.partition in GROUP_MODES and spec.targets is None:
        out.append(("targets", []))
    return out + [(f"groups[{i}]", terms_of(g)) for i, g in enumerate(spec.groups or [])]


def check_field(spec: FaultSpec, field: str, terms: list[str], nodes: Mapping[str, NodeInfo]) -> None:
    """Refuse, with :class:`TargetError`, a bad role term in one field, a role term where the
    plan must split its targets now, or group-mode targets that are not one DLedger group."""
    check_role_terms(terms, nodes)
    mode = spec.partition
    if field != "targets" or mode in (None, "isolate", "groups"):
        return
    if mode in GROUP_MODES:
        group_of_members(mode, terms, nodes)
    elif roles := [t for t in terms if mentions_role(t)]:
        raise TargetError(f"{roles[0]}: {mode} splits its targets when the plan is built, and a role term is "
                          f"only known when the fault fires (use isolate, groups, or {', '.join(GROUP_MODES)})")


def group_of_members(mode: str, terms: list[str], nodes: Mapping[str, NodeInfo]) -> str:
    """The DLedger group a group mode splits: its ``targets`` must be exactly one group's peers
    (``broker:<name>``, or the peers' names), so no draw decides them."""
    groups = dledger_groups(nodes)
    hint = (f"give one DLedger group's peers, as broker:<name> "
            f"(DLedger groups: {', '.join(groups) or 'none in this topology'})")
    if not terms:
        raise TargetError(f"{mode} splits one DLedger group around its leader: {hint}")
    drawn = [t for t in terms if t.lstrip("!").partition(":")[0] in SELECTORS or mentions_role(t)]
    if drawn:
        raise TargetError(f"{drawn[0]}: {mode} takes no selector or role term: {hint}")
    members = set(resolve_targets(terms, nodes, random.Random(0)))  # no selector: no draw
    found = [g for g, peers in groups.items() if set(peers) == members]
    if not found:
        raise TargetError(f"{','.join(terms)} is not the peers of one DLedger group: {hint}")
    return found[0]


def has_roles(*exprs: Any) -> bool:
    return any(is_role_term(t) for e in exprs for t in terms_of(e))


def group_partition(spec: FaultSpec, nodes: Mapping[str, NodeInfo], rng: random.Random
                    ) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A group mode's targets (the peers) and params (the peers in a seeded order)."""
    mode = spec.partition or ""
    group = group_of_members(mode, terms_of(spec.targets), nodes)
    peers = dledger_groups(nodes)[group]
    need = GROUP_MODES[mode][1]
    if len(peers) < need:
        raise PartitionError(f"{mode}: needs a DLedger group of at least {need} peers; {group} has {len(peers)}")
    order = sorted(peers)
    rng.shuffle(order)
    return tuple(peers), {"mode": mode, "oneway": spec.oneway, "links": [], "groups": [], "peers": order}


def role_partition(spec: FaultSpec, nodes: Mapping[str, NodeInfo], pick: Pick
                   ) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An ``isolate`` / ``groups`` partition naming a role term: its terms, kept for when it fires."""
    if spec.partition == "groups":
        groups = [pick(g) for g in spec.groups or []]
        _check_disjoint(groups, nodes)
    else:
        groups = [pick(spec.targets or ["one"])]
    targets = list(dict.fromkeys(t for g in groups for t in g))
    return tuple(targets), {"mode": spec.partition, "oneway": spec.oneway, "links": [], "groups": groups}


def _check_disjoint(groups: list[list[str]], nodes: Mapping[str, NodeInfo]) -> None:
    """Refuse groups that could share a node when the fault fires: two terms of different groups
    that may hit one node, unless they are a leader and the followers (never the same peer)."""
    def hits(term: str) -> set[str]:
        return peers_touched([term], nodes) if is_role_term(term) else {term}

    for i, a_group in enumerate(groups):
        for j in range(i + 1, len(groups)):
            for a in a_group:
                for b in groups[j]:
                    kinds = {a.partition(":")[0], b.partition(":")[0]}
                    if is_role_term(a) and is_role_term(b) and kinds == {"leader", "followers"}:
                        continue
                    if shared := sorted(hits(a) & hits(b)):
                        raise PartitionError(f"groups[{i}] ({a}) and groups[{j}] ({b}) may both hold {shared[0]} "
                                             f"when the fault fires")


def fire_note(kind: str, targets: tuple[str, ...], params: Mapping[str, Any], nodes: Mapping[str, NodeInfo]) -> str:
    """What ``plan.json`` says of a step decided when it fires ("" for every other step)."""
    if params.get("mode") in GROUP_MODES:
        group = nodes[targets[0]].broker
        return (f"{params['mode']} of {group}: resolved when the step fires, from the DLedger leader then "
                f"(its side is filled from params.peers in order)")
    named = [*targets, *(t for g in params.get("groups") or [] for t in g), *(params.get("to") or [])]
    roles = list(dict.fromkeys(t for t in named if is_role_term(t)))
    return f"{', '.join(roles)}: resolved when the step fires, from the DLedger leader then" if roles else ""
