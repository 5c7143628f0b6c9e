"""Partition maths: which directed links a partition blocks. Pure functions, no I/O.

A partition is described by groups of node names; the result is always a sorted list of blocked
directed links ``(src, dst)``, which is what the transport's link table and ``fault.start``'s
``params.links`` hold. Symmetric cuts block both directions between groups; ``oneway=True`` blocks
only links from an earlier group to a later one ("the first group cannot reach the second"), so a
node of the first group still hears from the second, as in Jepsen's one-way grudges.

Nodes outside every group are not affected. Functions that split a set of nodes (``halves``,
``majority``, ``majorities_ring``, ``bridge``) take the nodes *in the order to split them*: the
caller shuffles with the run's seeded RNG (see :func:`plan_partition`), so the maths stays
hand-checkable.

The group modes (``leader-alone``, ``leader-minority``, ``leader-majority``, :data:`GROUP_MODES`) split
one DLedger group's peers around its leader, which is only known when the fault fires: the plan
keeps the peers in a seeded order, and :func:`plan_leader_partition` fills the leader's side from
that order once the leader is known. Only the peers are split; every other node keeps all its links.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Sequence

from rmqemu.errors import PartitionError

Link = tuple[str, str]


def _check_unique(nodes: Sequence[str], what: str) -> list[str]:
    seen: set[str] = set()
    dups = sorted({n for n in nodes if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
    if dups:
        raise PartitionError(f"{what}: node(s) listed twice: {', '.join(dups)}")
    return list(nodes)


def cut(groups: Sequence[Sequence[str]], oneway: bool = False) -> list[Link]:
    """Block every link between different groups (only earlier -> later ones if ``oneway``)."""
    if len(groups) < 2:
        raise PartitionError(f"a partition needs at least two groups, got {len(groups)}")
    empty = [i for i, g in enumerate(groups) if not g]
    if empty:
        raise PartitionError(f"partition group(s) {empty} are empty: every group needs a node")
    _check_unique([n for g in groups for n in g], "partition groups overlap")
    links: set[Link] = set()
    for i, a in enumerate(groups):
        for j, b in enumerate(groups):
            if i == j or (oneway and j < i):
                continue
            links.update((src, dst) for src in a for dst in b)
    return sorted(links)


def isolate(nodes: Sequence[str], targets: Sequence[str], oneway: bool = False) -> list[Link]:
    """Cut ``targets`` (as one group) off from every other node; one-way: targets cannot send."""
    nodes = _check_unique(nodes, "isolate")
    unknown = [t for t in targets if t not in nodes]
    if unknown:
        raise PartitionError(f"isolate: {', '.join(unknown)} not among the nodes {', '.join(nodes)}")
    if not targets:
        raise PartitionError("isolate: no node to isolate")
    rest = [n for n in nodes if n not in targets]
    if not rest:
        raise PartitionError(f"isolate: nothing left to cut {', '.join(targets)} off from "
                             f"(it needs at least one other node)")
    return cut([list(targets), rest], oneway)


def halves(nodes: Sequence[str], oneway: bool = False) -> list[Link]:
    """Split into the first ``n // 2`` nodes and the rest (Jepsen's bisect); needs 2 nodes."""
    nodes = _check_unique(nodes, "halves")
    if len(nodes) < 2:
        raise PartitionError(f"halves: needs at least 2 nodes, got {len(nodes)}")
    k = len(nodes) // 2
    return cut([nodes[:k], nodes[k:]], oneway)


def majority(nodes: Sequence[str], oneway: bool = False) -> list[Link]:
    """Cut the first ``(n - 1) // 2`` nodes (the largest strict minority) off from the majority.

    Unlike ``halves`` it never splits an even cluster evenly: one side always keeps a majority.
    One-way: the minority cannot reach the majority. Needs 3 nodes (with 2 a minority is empty).
    """
    nodes = _check_unique(nodes, "majority")
    if len(nodes) < 3:
        raise PartitionError(f"majority: needs at least 3 nodes (a strict minority of {len(nodes)} is empty)")
    k = (len(nodes) - 1) // 2
    return cut([nodes[:k], nodes[k:]], oneway)


def majorities_ring(nodes: Sequence[str]) -> list[Link]:
    """Jepsen's majorities ring: every node sees a majority, but no two see the same one.

    The nodes sit on a ring in the given order; each keeps the links to the nodes within ring
    distance ``d = ceil((n // 2) / 2)`` (so it sees ``2d + 1 >= n // 2 + 1`` nodes counting itself)
    and loses the others. This is the symmetric variant: ``a`` sees ``b`` iff ``b`` sees ``a``.
    Needs 4 nodes: with 3 every node's majority is the whole ring and nothing would be cut.
    """
    nodes = _check_unique(nodes, "majorities-ring")
    n = len(nodes)
    if n < 4:
        raise PartitionError(f"majorities-ring: needs at least 4 nodes, got {n} "
                             f"(with fewer every majority is the whole ring)")
    reach = math.ceil((n // 2) / 2)
    links = []
    for i, src in enumerate(nodes):
        for j, dst in enumerate(nodes):
            distance = min(abs(i - j), n - abs(i - j))
            if distance > reach:
                links.append((src, dst))
    return sorted(links)


def bridge(nodes: Sequence[str], oneway: bool = False) -> list[Link]:
    """Two halves that cannot talk, joined by one node that sees both (Jepsen's bridge).

    Groups: ``nodes[:n//2]``, the bridge ``nodes[n//2]``, and ``nodes[n//2+1:]``; only the two
    outer groups are cut from each other. Needs 3 nodes.
    """
    nodes = _check_unique(nodes, "bridge")
    if len(nodes) < 3:
        raise PartitionError(f"bridge: needs at least 3 nodes (two sides and the bridge), got {len(nodes)}")
    k = len(nodes) // 2
    return cut([nodes[:k], nodes[k + 1:]], oneway)


#: Partition modes around a DLedger group's leader -> (the leader's side size for n peers, the
#: fewest peers the mode needs): the leader alone; the largest strict minority, leader included
#: (5 peers: leader + 1 vs 3); the smallest majority, leader included (3 peers: leader + 1 vs 1).
GROUP_MODES: dict[str, tuple[Callable[[int], int], int]] = {
    "leader-alone": (lambda n: 1, 2),
    "leader-minority": (lambda n: (n - 1) // 2, 3),
    "leader-majority": (lambda n: n // 2 + 1, 3),
}


def leader_sides(mode: str, peers: Sequence[str], leader: str) -> list[list[str]]:
    """``[the leader's side, the rest]`` of one group: the leader first, then the followers in
    the order of ``peers`` until the side has its size (:data:`GROUP_MODES`); the rest in that order."""
    if mode not in GROUP_MODES:
        raise PartitionError(f"unknown group partition mode {mode!r}; expected one of {', '.join(GROUP_MODES)}")
    peers = _check_unique(peers, mode)
    size, need = GROUP_MODES[mode]
    if len(peers) < need:
        raise PartitionError(f"{mode}: needs a group of at least {need} peers, got {len(peers)}")
    if leader not in peers:
        raise PartitionError(f"{mode}: the leader {leader} is not one of the peers {', '.join(peers)}")
    followers = [p for p in peers if p != leader]
    k = size(len(peers))
    return [[leader, *followers[:k - 1]], followers[k - 1:]]


def plan_leader_partition(mode: str, peers: Sequence[str], leader: str, oneway: bool = False) -> "PartitionPlan":
    """A group mode resolved once the leader is known (``oneway``: the leader's side cannot send)."""
    groups = leader_sides(mode, peers, leader)
    return PartitionPlan(mode, groups, cut(groups, oneway), oneway)


@dataclass(frozen=True)
class PartitionPlan:
    """A resolved partition: the groups it was built from (for the record) and its blocked links.

    ``groups`` is ``[targets, rest]`` for isolate, the two sides for halves/majority,
    ``[side_a, [bridge], side_b]`` for bridge, ``[ring order]`` for majorities-ring, and
    ``[leader's side, rest]`` for the group modes (the leader first in its side).
    """

    mode: str
    groups: list[list[str]]
    links: list[Link]
    oneway: bool = False


def plan_partition(
    mode: str,
    nodes: Sequence[str],
    *,
    targets: Sequence[str] | None = None,
    groups: Sequence[Sequence[str]] | None = None,
    oneway: bool = False,
    rng: random.Random | None = None,
) -> PartitionPlan:
    """Resolve a partition mode to concrete groups and links.

    ``nodes`` are the nodes taking part (the spec's resolved ``targets``, all nodes by default);
    for ``isolate``, ``targets`` are the nodes cut off from the rest of ``nodes``; for ``groups``,
    ``groups`` are used as given. The split modes shuffle ``sorted(nodes)`` with ``rng`` first,
    so the result depends only on the node set and the RNG's state.
    """
    if mode == "groups":
        if groups is None:
            raise PartitionError("partition groups: needs explicit groups")
        gs = [list(g) for g in groups]
        return PartitionPlan(mode, gs, cut(gs, oneway), oneway)
    if mode == "isolate":
        chosen = list(targets or [])
        rest = [n for n in nodes if n not in chosen]
        return PartitionPlan(mode, [chosen, rest], isolate(nodes, chosen, oneway), oneway)
    order = sorted(_check_unique(nodes, mode))
    if rng is not None:
        rng.shuffle(order)
    n, k = len(order), len(order) // 2
    if mode == "halves":
        return PartitionPlan(mode, [order[:k], order[k:]], halves(order, oneway), oneway)
    if mode == "majority":
        m = (n - 1) // 2
        return PartitionPlan(mode, [order[:m], order[m:]], majority(order, oneway), oneway)
    if mode == "bridge":
        return PartitionPlan(mode, [order[:k], order[k:k + 1], order[k + 1:]], bridge(order, oneway), oneway)
    if mode == "majorities-ring":
        if oneway:
            raise PartitionError("majorities-ring cannot be oneway: it has no first group")
        return PartitionPlan(mode, [order], majorities_ring(order), False)
    if mode in GROUP_MODES:
        raise PartitionError(f"{mode} splits a DLedger group around its leader: plan_leader_partition, when it fires")
    raise PartitionError(f"unknown partition mode {mode!r}; expected one of "
                         f"isolate, halves, majority, majorities-ring, bridge, groups, {', '.join(GROUP_MODES)}")
