"""Target selection: turn a target expression into concrete node names. Pure, seeded.

A target expression is a list of terms (or one string, commas allowed); the result is the union
of the terms, minus the terms written with a leading ``!``, in node-table order. Terms:

- a node name: ``broker-a-0``, ``namesrv-1``, ``pg-1-0``;
- a role: ``namesrv``, ``broker`` (every broker node), ``master`` (broker_id 0), ``slave``
  (broker_id > 0), ``producer``, ``consumer``, ``proxy``, ``broker:<name>`` (master and slaves of one
  broker), ``group:<name>`` (the instances of one client group);
- a selector, drawn with the run's RNG: ``one``, ``minority`` (``(n-1)//2`` nodes), ``majority``
  (``n//2 + 1``), ``all``; over every node, or over a role as ``<selector>:<role>``
  (``one:master``, ``majority:namesrv``, ``one:broker:broker-a``).

Randomness is drawn only from the ``random.Random`` passed in, term by term in order, so a plan
built from a seed picks the same nodes every time.
"""

from __future__ import annotations

import random
from typing import Callable, Mapping, Sequence

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import TargetError

SELECTORS: tuple[str, ...] = ("one", "minority", "majority", "all")
ROLE_TERMS: tuple[str, ...] = ("namesrv", "broker", "master", "slave", "producer", "consumer", "proxy")

_ROLE_MATCH: dict[str, Callable[[NodeInfo], bool]] = {
    "namesrv": lambda n: n.role == "namesrv",
    "broker": lambda n: n.role == "broker",
    "master": lambda n: n.is_master,
    "slave": lambda n: n.is_slave,
    "producer": lambda n: n.role == "producer",
    "consumer": lambda n: n.role == "consumer",
    "proxy": lambda n: n.role == "proxy",
}


def selector_size(selector: str, n: int) -> int:
    """How many of ``n`` nodes a selector picks."""
    return {"one": min(1, n), "minority": (n - 1) // 2, "majority": n // 2 + 1, "all": n}[selector]


def _help(nodes: Mapping[str, NodeInfo]) -> str:
    return (f"expected a node name ({', '.join(nodes) or 'no nodes'}), a role "
            f"({', '.join(ROLE_TERMS)}, broker:<name>, group:<name>) or a selector "
            f"({', '.join(SELECTORS)}, optionally over a role: one:master)")


def _role_members(term: str, nodes: Mapping[str, NodeInfo]) -> list[str] | None:
    """Members of a role term, or None if ``term`` is not a role term."""
    if term in _ROLE_MATCH:
        return [name for name, info in nodes.items() if _ROLE_MATCH[term](info)]
    for prefix, attr, role in (("broker:", "broker", "broker"), ("group:", "group", "client")):
        if term.startswith(prefix):
            wanted = term[len(prefix):]
            members = [name for name, info in nodes.items() if getattr(info, attr) == wanted]
            if not members:
                known = sorted({getattr(i, attr) for i in nodes.values() if getattr(i, attr)})
                raise TargetError(f"unknown {role} {wanted!r} in target {term!r} (known: {', '.join(known) or 'none'})")
            return members
    return None


def _term(term: str, nodes: Mapping[str, NodeInfo], rng: random.Random) -> list[str]:
    if term in nodes:
        return [term]
    members = _role_members(term, nodes)
    if members is not None:
        return members
    selector, _, pool_term = term.partition(":")
    if selector in SELECTORS:
        pool = list(nodes) if not pool_term else _role_members(pool_term, nodes)
        if pool is None:
            raise TargetError(f"unknown role {pool_term!r} in selector {term!r}, {_help(nodes)}")
        k = selector_size(selector, len(pool))
        if k == 0:
            raise TargetError(f"selector {term!r} picks no node out of {len(pool)} "
                              f"({', '.join(pool) or 'none'})")
        return pool if k == len(pool) else rng.sample(pool, k)
    raise TargetError(f"unknown target {term!r}, {_help(nodes)}")


def resolve_targets(
    expr: str | Sequence[str],
    nodes: Mapping[str, NodeInfo],
    rng: random.Random,
    *,
    allow_empty: bool = False,
) -> list[str]:
    """Resolve a target expression to node names, in node-table order (see the module doc)."""
    terms = [expr] if isinstance(expr, str) else list(expr)
    terms = [p.strip() for t in terms for p in t.split(",") if p.strip()]
    if not terms:
        raise TargetError(f"no target given, {_help(nodes)}")
    include: set[str] = set()
    exclude: set[str] = set()
    for term in terms:
        if term.startswith("!"):
            exclude.update(_term(term[1:], nodes, rng))
        else:
            include.update(_term(term, nodes, rng))
    if not any(not t.startswith("!") for t in terms):
        include = set(nodes)  # only exclusions: "everything but ..."
    chosen = [name for name in nodes if name in include and name not in exclude]
    if not chosen and not allow_empty:
        raise TargetError(f"target {', '.join(terms)} selects no node")
    return chosen
