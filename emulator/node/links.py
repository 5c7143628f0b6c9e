"""The directed link table of docs/design.md §2: what the fault injector pushes to every node.

Pure data and pure decisions. The transport asks :meth:`LinkTable.on_send` before sending to a
peer and :meth:`LinkTable.on_receive` after receiving from one; the answer says whether to drop the
frame, how long to hold it back, and how many copies to deliver. Randomness comes from an injected
``random.Random`` so a seeded run makes the same decisions.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable


@dataclass(frozen=True)
class LinkRule:
    """Faults on one directed link ``src -> dst`` (node names)."""

    blocked: bool = False
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0  # probability in [0, 1]
    duplicate: float = 0.0  # probability in [0, 1]

    def is_noop(self) -> bool:
        return self == LinkRule()

    def merged(self, other: "LinkRule") -> "LinkRule":
        """Two faults on one link add up: blocked if either, delays add, probabilities combine."""
        return LinkRule(
            blocked=self.blocked or other.blocked,
            delay_ms=self.delay_ms + other.delay_ms,
            jitter_ms=self.jitter_ms + other.jitter_ms,
            loss=1 - (1 - self.loss) * (1 - other.loss),
            duplicate=1 - (1 - self.duplicate) * (1 - other.duplicate),
        )


@dataclass(frozen=True)
class Delivery:
    """The decision for one frame: ``copies == 0`` means dropped."""

    copies: int = 1
    delay_ms: float = 0.0

    @property
    def dropped(self) -> bool:
        return self.copies == 0


DELIVER = Delivery()
DROP = Delivery(copies=0)


@dataclass
class LinkTable:
    """``(src, dst) -> LinkRule``; a missing entry is a healthy link."""

    rules: dict[tuple[str, str], LinkRule] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)

    def rule(self, src: str, dst: str) -> LinkRule | None:
        return self.rules.get((src, dst))

    def replace(self, rules: dict[tuple[str, str], LinkRule]) -> None:
        self.rules = {k: v for k, v in rules.items() if not v.is_noop()}

    def on_send(self, src: str, dst: str) -> Delivery:
        """Sender side: block, loss, delay + jitter and duplication of ``(src, dst)``."""
        rule = self.rules.get((src, dst))
        if rule is None:
            return DELIVER
        if rule.blocked or (rule.loss > 0 and self.rng.random() < rule.loss):
            return DROP
        delay = rule.delay_ms
        if rule.jitter_ms > 0:
            delay = max(0.0, delay + self.rng.uniform(-rule.jitter_ms, rule.jitter_ms))
        copies = 2 if rule.duplicate > 0 and self.rng.random() < rule.duplicate else 1
        return Delivery(copies=copies, delay_ms=delay)

    def on_receive(self, src: str, dst: str) -> Delivery:
        """Receiver side: only a block drops here (loss and delay were applied by the sender)."""
        rule = self.rules.get((src, dst))
        if rule is not None and rule.blocked:
            return DROP
        return DELIVER

    def blocked_links(self) -> list[tuple[str, str]]:
        return sorted(k for k, v in self.rules.items() if v.blocked)


def rules_to_wire(rules: dict[tuple[str, str], LinkRule]) -> list[dict[str, Any]]:
    """JSON-friendly form for the control plane and for ``fault.start`` params."""
    return [{"src": s, "dst": d, **asdict(r)} for (s, d), r in sorted(rules.items())]


def rules_from_wire(items: Iterable[dict[str, Any]]) -> dict[tuple[str, str], LinkRule]:
    out: dict[tuple[str, str], LinkRule] = {}
    for item in items:
        fields = {k: v for k, v in item.items() if k in LinkRule.__dataclass_fields__}
        out[(str(item["src"]), str(item["dst"]))] = LinkRule(**fields)
    return out
