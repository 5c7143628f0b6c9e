"""Role terms: targets in a DLedger group that are decided when the fault fires. Pure.

A DLedger group (docs/rocketmq-model.md §8) elects its master, so which peer leads is only known
while the run goes on. Three target terms name a peer by its role at that moment:

- ``leader:<broker>`` — the group's current DLedger leader;
- ``followers:<broker>`` — its other peers (every peer but the leader, live or not);
- ``leader`` — the leader of every DLedger group.

A plan keeps them as written (``plan.json`` shows ``leader:broker-a``); the injector binds them
when the step fires (:mod:`faults.binding`), from the leaders the cluster reports then. A group
without a leader at that moment (an election under way) binds nothing. Because the node is not
known in advance, a role term is never drawn from (``one:followers:x``) nor excluded
(``!leader:x``), and it takes no part in the seeded draws of the plan.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import TargetError

LEADER = "leader"
ROLE_PREFIXES: tuple[str, ...] = ("leader:", "followers:")
ROLE_TERMS_HELP = "leader:<broker>, followers:<broker> or leader"
Leaders = Mapping[str, "str | None"]  # DLedger group -> its leader's node name now (None: no leader)


def is_role_term(term: str) -> bool:
    """``leader``, ``leader:<broker>``, ``followers:<broker>`` (also written ``!...``)."""
    t = term.strip().lstrip("!")
    return t == LEADER or t.startswith(ROLE_PREFIXES)


def mentions_role(term: str) -> bool:
    """A role term, or a selector drawn over one (``one:followers:broker-a``, refused)."""
    return is_role_term(term) or is_role_term(term.lstrip("!").partition(":")[2])


def dledger_groups(nodes: Mapping[str, NodeInfo]) -> dict[str, list[str]]:
    """DLedger group -> its peers' node names, in node-table order (a peer has ``peer`` set)."""
    groups: dict[str, list[str]] = {}
    for name, info in nodes.items():
        if info.role == "broker" and info.peer is not None and info.broker is not None:
            groups.setdefault(info.broker, []).append(name)
    return groups


def _known(groups: Mapping[str, list[str]]) -> str:
    return f"DLedger groups: {', '.join(groups)}" if groups else "this topology has no DLedger group"


def groups_of(term: str, nodes: Mapping[str, NodeInfo]) -> list[str]:
    """The DLedger groups a role term is about; :class:`TargetError` if it names none."""
    groups = dledger_groups(nodes)
    t = term.strip()
    if t.startswith("!") or (not is_role_term(t) and mentions_role(t)):
        raise TargetError(f"{t}: a role term is only known when the fault fires, so it cannot be "
                          f"{'excluded' if t.startswith('!') else 'drawn from'} (use {ROLE_TERMS_HELP} as it is)")
    if t == LEADER:
        if not groups:
            raise TargetError(f"{t}: picks the leader of every DLedger group, and {_known(groups)}")
        return list(groups)
    name = t.partition(":")[2]
    if name in groups:
        return [name]
    classic = any(i.broker == name for i in nodes.values() if i.role == "broker")
    what = "a master/slave broker, not a DLedger group" if classic else "not a DLedger group"
    raise TargetError(f"{t}: {name or '(no name)'} is {what} ({_known(groups)})")


def check_role_terms(terms: Iterable[str], nodes: Mapping[str, NodeInfo]) -> None:
    """Refuse role terms naming no DLedger group, drawn from or excluded, or mixed with
    exclusions (``!x`` beside a role term would mean "all but x" today and more tomorrow)."""
    items = list(terms)
    roles = [t for t in items if mentions_role(t)]
    for term in roles:
        groups_of(term, nodes)
    excluded = [t for t in items if t.startswith("!")]
    if roles and excluded:
        raise TargetError(f"{', '.join(excluded)}: a target with a role term ({roles[0]}) takes no exclusions")


def split_roles(terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(other terms, role terms)``, each in the order written, role terms once each."""
    return [t for t in terms if not is_role_term(t)], list(dict.fromkeys(t for t in terms if is_role_term(t)))


def peers_touched(terms: Iterable[str], nodes: Mapping[str, NodeInfo]) -> set[str]:
    """Every peer the role terms could hit, whoever leads (what a plan must treat as touched)."""
    groups = dledger_groups(nodes)
    return {p for t in terms if is_role_term(t) for g in groups_of(t, nodes) for p in groups[g]}


def bind_roles(terms: Sequence[str], nodes: Mapping[str, NodeInfo],
               leaders: Leaders) -> tuple[list[str], dict[str, str]]:
    """Role terms and node names -> ``(node names in node-table order, refused)``; ``refused``
    names each ``leader:<broker>`` / ``followers:<broker>`` of a group without a leader now."""
    groups = dledger_groups(nodes)
    chosen: set[str] = set()
    refused: dict[str, str] = {}
    for term in terms:
        if not is_role_term(term):
            chosen.add(term)
            continue
        for group in groups_of(term, nodes):
            leader = leaders.get(group)
            which = "leader" if term.startswith(LEADER) else "followers"
            if leader is None:
                refused[f"{which}:{group}"] = f"{group} has no DLedger leader now (an election is under way?)"
            elif leader not in groups[group]:
                refused[f"{which}:{group}"] = f"the cluster names {leader} as {group}'s leader, not one of its peers"
            elif which == "leader":
                chosen.add(leader)
            else:
                chosen.update(p for p in groups[group] if p != leader)
    others = [t for t in dict.fromkeys(terms) if t in chosen and t not in nodes]  # real clients, as written
    return [n for n in nodes if n in chosen] + others, refused
