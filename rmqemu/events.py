"""The event registry: every kind of JSON line a run writes, who writes it, and its fields.

One declaration (:mod:`rmqemu.event_kinds`, in the vocabulary of :mod:`rmqemu.event_types`),
several views of it, after Maelstrom's ``defrpc``: the writers check each line against it
(:func:`check`), ``docs/events.md`` is rendered from it (:func:`markdown`), the report's read
schema is built from it (``reports/core/schema.py``, :func:`columns`) and the tests check real
runs against it (:func:`problems`). Lines of older runs are brought to the current types by
:func:`upgrade`.

Only this package's modules are imported: every layer (roles, node runtime, launcher, faults,
reports) may use it. Run ``python -m rmqemu.events > docs/events.md`` after changing a kind.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from rmqemu.event_doc import markdown
from rmqemu.event_kinds import COMMON, SECTIONS
from rmqemu.event_types import QUEUES, Field, Kind, Type, fields_problems

__all__ = ["COMMON", "KINDS", "Field", "Kind", "check", "check_line", "columns", "markdown", "problems", "upgrade"]

#: kind name -> its declaration, in page order.
KINDS: dict[str, Kind] = {k.name: k for s in SECTIONS for k in s.kinds}
#: ``ts``, ``node``, ``kind``, ``local_ms``: added by the writer, not by the code that emits.
COMMON_NAMES = frozenset(f.name for f in COMMON)
_ALLOWED: dict[str, frozenset[str]] = {name: frozenset(f.name for f in k.fields) for name, k in KINDS.items()}


def check(kind: str, fields: Iterable[str]) -> None:
    """Refuse a kind or a field name the registry does not list (:class:`ValueError`).

    Called for every line a process writes (``Emit``, the node's event log, the launcher's and
    the injector's lines), so it only looks names up: a dict lookup and a subset test. Types
    are checked by :func:`problems`, in the tests. ``fields``: the names (a dict will do), not
    the common ones the writer adds.
    """
    allowed = _ALLOWED.get(kind)
    if allowed is None:
        raise ValueError(f"event kind {kind!r} is not registered in rmqemu/event_kinds.py "
                         f"(registered: {', '.join(KINDS)})")
    names = fields if isinstance(fields, Mapping) else list(fields)
    if not allowed.issuperset(names):
        unknown = ", ".join(sorted(set(names) - allowed))
        raise ValueError(f"event kind {kind!r}: field(s) {unknown} not registered in rmqemu/event_kinds.py "
                         f"({kind} has: {', '.join(sorted(allowed)) or 'no fields'})")


def check_line(event: Mapping[str, Any]) -> None:
    """:func:`check` for a whole line (``ts``/``node``/``kind`` included), as the launcher and the
    injector write them."""
    kind = event.get("kind")
    if not isinstance(kind, str):
        raise ValueError(f"an event line needs a string 'kind', got {kind!r}")
    check(kind, [name for name in event if name not in COMMON_NAMES])


def problems(event: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one parsed line: an unregistered kind or field, a missing required
    field, a null where none is allowed, a value of the wrong type. Empty for a good line."""
    kind = event.get("kind")
    decl = KINDS.get(kind) if isinstance(kind, str) else None
    if decl is None:
        return [f"kind {kind!r}: not registered"]
    return fields_problems(COMMON + decl.fields, dict(event), str(kind))


def columns() -> dict[str, Field]:
    """Every top-level field name of any kind (common ones first) -> its declaration: the
    columns of a union table such as the Spark read schema. A name must have one type in every
    kind that writes it, or one column could not hold them all; :class:`ValueError` if not."""
    out: dict[str, Field] = {f.name: f for f in COMMON}
    where: dict[str, str] = {}
    for kind in KINDS.values():
        for f in kind.fields:
            seen: Type | None = out[f.name].type if f.name in out else None
            if seen is not None and seen != f.type:
                raise ValueError(f"field {f.name!r}: {kind.name} declares another type than "
                                 f"{where.get(f.name, 'the common fields')}")
            out.setdefault(f.name, f)
            where.setdefault(f.name, kind.name)
    return out


#: The fields holding queues (:data:`rmqemu.event_types.QUEUES`), which older runs wrote as pairs.
_QUEUE_FIELDS = tuple(name for name, f in columns().items() if f.type == QUEUES)


def upgrade(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` (a parsed line) as the current registry types it, for runs written by earlier
    versions (docs/design.md §6, "Older runs"): a queue written as a ``[broker, queue_id]`` pair
    becomes ``{"broker": ..., "queue_id": ...}``. Anything else is left as it is (a value that
    is still of the wrong type makes a broken line). The same dict when nothing changed."""
    out = event
    for name in _QUEUE_FIELDS:
        value = event.get(name)
        if isinstance(value, list) and any(isinstance(q, list) for q in value):
            if out is event:
                out = dict(event)
            out[name] = [{"broker": q[0], "queue_id": q[1]} if isinstance(q, list) and len(q) == 2 else q
                         for q in value]
    return out


def main() -> int:
    """``python -m rmqemu.events``: print ``docs/events.md``."""
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
