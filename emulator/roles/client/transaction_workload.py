"""A transactional producer's workload: what its local transactions and its check answers say
(docs/rocketmq-model.md §9.1).

``transaction`` of a producer workload (the node spec's form; the topology's is
:mod:`emulator.launcher.topology_tx`): ``local`` and ``check`` are shares of the three
``LocalTransactionState`` outcomes (``commit``, ``rollback``, ``unknown``; a missing one is 0, the
shares add up to 1), ``local_ms`` and ``check_ms`` the cluster ms a local transaction and a check
take before the end is sent. The rules on the shares live here, once: the topology's checks call
:func:`shares_problem` and :func:`transaction_problem` too.

Draws: each outcome is one ``random()`` of a ``random.Random`` of its own (seeded from the node's
seed, one stream for local transactions and one for checks), so the outcome of a producer's
``k``-th message depends on the seed and ``k`` only, not on which sends failed or when checks came.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

#: ``LocalTransactionState`` by the workload's outcome names, in draw order.
STATES = {"commit": "COMMIT_MESSAGE", "rollback": "ROLLBACK_MESSAGE", "unknown": "UNKNOW"}
SUM_TOLERANCE = 1e-6
MAX_MS = 3_600_000.0  # an hour of cluster time: longer is a typo, not a local transaction


def shares_problem(value: Any) -> str | None:
    """Why ``value`` is no mapping of outcome shares, or None. A piece ``"<key>: ..."`` names the
    outcome at fault (the topology's error path then ends with it)."""
    if not isinstance(value, dict):
        return f"expected a mapping of shares {{commit, rollback, unknown}}, got {str(value)[:40]!r}"
    unknown = sorted(str(k) for k in value if k not in STATES)
    if unknown:
        return f"{unknown[0]}: unknown outcome (known: {', '.join(STATES)})"
    for key, share in value.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
            return f"{key}: must be a share from 0 to 1, got {str(share)[:40]!r}"
    return sum_problem(*(float(value.get(k, 0.0)) for k in STATES))


def sum_problem(commit: float, rollback: float, unknown: float) -> str | None:
    """The shares of the three outcomes must add up to 1 (each message gets exactly one)."""
    total = commit + rollback + unknown
    if abs(total - 1.0) > SUM_TOLERANCE:
        return (f"the shares must add up to 1, got {total:g} (commit {commit:g} + rollback {rollback:g} "
                f"+ unknown {unknown:g})")
    return None


def transaction_problem(mode: str, batch: int, ordered: bool) -> str | None:
    """``sendMessageInTransaction(msg, arg)`` sends one message, synchronously, through the
    default queue selection: no other mode, no batch, no sharding key."""
    if mode != "sync" or batch != 1 or ordered:
        return ("needs mode: sync, batch: 1 and no ordered (sendMessageInTransaction sends one message "
                f"synchronously through the default queue selection), got mode: {mode}, batch: {batch}"
                + (", ordered" if ordered else ""))
    return None


def duration_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= MAX_MS \
            or not math.isfinite(value):
        return f"must be cluster ms from 0 to {MAX_MS:g}, got {str(value)[:40]!r}"
    return None


@dataclass(frozen=True)
class Shares:
    """Shares of the outcomes; :meth:`draw` picks one with them."""

    commit: float = 1.0
    rollback: float = 0.0
    unknown: float = 0.0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Shares":
        return cls(**{k: float(d.get(k, 0.0)) for k in STATES})

    def draw(self, rng: random.Random) -> str:
        """One ``LocalTransactionState`` name: ``u < commit`` commits, ``u < commit + rollback``
        rolls back, anything else is UNKNOW."""
        u = rng.random()
        if u < self.commit:
            return STATES["commit"]
        if u < self.commit + self.rollback:
            return STATES["rollback"]
        return STATES["unknown"]

    def to_dict(self) -> dict[str, float]:
        return {"commit": self.commit, "rollback": self.rollback, "unknown": self.unknown}


@dataclass(frozen=True)
class TransactionWorkload:
    """``workload.transaction`` of a producer node."""

    local: Shares = field(default_factory=Shares)
    check: Shares = field(default_factory=Shares)
    local_ms: float = 0.0
    check_ms: float = 0.0

    @classmethod
    def from_dict(cls, d: Any) -> "TransactionWorkload":
        """Raises ``ValueError("workload.transaction.<field>: ...")`` on the first problem."""
        where = "workload.transaction"
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a mapping {{local, check, local_ms, check_ms}}, got {d!r:.40}")
        unknown = sorted(set(d) - {"local", "check", "local_ms", "check_ms"})
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]} (known: local, check, local_ms, check_ms)")
        for key in ("local", "check"):
            problem = shares_problem(d[key]) if key in d else None
            if problem:
                raise ValueError(f"{where}.{key}: {problem}")
        for key in ("local_ms", "check_ms"):
            problem = duration_problem(d[key]) if key in d else None
            if problem:
                raise ValueError(f"{where}.{key}: {problem}")
        return cls(Shares.from_dict(d["local"]) if "local" in d else Shares(),
                   Shares.from_dict(d["check"]) if "check" in d else Shares(),
                   float(d.get("local_ms", 0.0)), float(d.get("check_ms", 0.0)))

    def to_dict(self) -> dict[str, Any]:
        """The node spec's form (what :meth:`from_dict` reads)."""
        return {"local": self.local.to_dict(), "check": self.check.to_dict(),
                "local_ms": self.local_ms, "check_ms": self.check_ms}
