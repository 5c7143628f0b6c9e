"""The vocabulary of the event registry (:mod:`rmqemu.events`): field types, fields, kinds.

Why a vocabulary of our own and not Python type hints: the same declaration has to become a
line of ``docs/events.md``, an Arrow field of the report's read schema
(``reports/core/schema.py``) and a check of a JSON value from a real run (``tests/eventdoc.py``);
a handful of frozen dataclasses say exactly what those three need and nothing more. Every type
is one JSON type a typed reader can hold (a list's items all of one type). Imports nothing from
the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

#: Scalar type names. ``long`` is an ``int`` that may not fit in 32 bits (pids, commit-log
#: offsets): JSON does not care, the Spark schema does.
SCALARS = ("str", "int", "long", "float", "bool")


@dataclass(frozen=True)
class Scalar:
    """A JSON string, whole number, number or boolean."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in SCALARS:
            raise ValueError(f"unknown scalar type {self.name!r}; expected one of {', '.join(SCALARS)}")


@dataclass(frozen=True)
class ListOf:
    """A JSON array whose items all have type ``item``."""

    item: "Type"


@dataclass(frozen=True)
class Pair:
    """``[a, b]``, both of type ``item``: a link ``[src, dst]``. A list of exactly two, so a
    typed reader reads it as a list of ``item`` (a value with members of different types is a
    :class:`Struct`, as a queue is)."""

    item: Scalar


@dataclass(frozen=True)
class MapOf:
    """A JSON object with free keys (node names) and values of one type."""

    value: "Type"


@dataclass(frozen=True)
class Struct:
    """A JSON object with named members, each optional unless marked required."""

    name: str
    fields: tuple["Field", ...]

    def member(self, name: str) -> "Field":
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no member {name!r}")


Type = Union[Scalar, ListOf, Pair, MapOf, Struct]


@dataclass(frozen=True)
class Field:
    """One field of an event line (or one member of a :class:`Struct`).

    ``required``: present on every line of its kind the emulator writes. ``nullable``: may be
    JSON ``null`` (e.g. ``latency_ms`` of an attempt that never got an answer). ``ext``: an
    addition to the design contract (docs/design.md §6), marked *(ext)* in the docs; the fields
    of a kind that is itself an extension need not say so.
    """

    name: str
    type: Type
    meaning: str = ""
    required: bool = False
    nullable: bool = False
    ext: bool = False


@dataclass(frozen=True)
class Kind:
    """One event kind: who writes it, what a line means and which fields it may carry."""

    name: str
    writer: str
    meaning: str
    fields: tuple[Field, ...] = ()
    ext: bool = False

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")


@dataclass(frozen=True)
class Section:
    """A heading of ``docs/events.md`` and the kinds listed under it, in order."""

    title: str
    kinds: tuple[Kind, ...]


# ----------------------------------------------------------------------------- shorthands

STR, INT, LONG, FLOAT, BOOL = (Scalar(n) for n in SCALARS)
STRS = ListOf(STR)
#: A message queue, as RocketMQ's ``MessageQueue`` names it (the topic is the line's).
QUEUE = Struct("queue", (Field("broker", STR, "broker name", required=True), Field("queue_id", INT, required=True)))
QUEUES = ListOf(QUEUE)          # [{"broker": ..., "queue_id": ...}, ...]
LINKS = ListOf(Pair(STR))       # [[src, dst], ...]


def describe(t: Type) -> str:
    """How ``docs/events.md`` writes a type: ``str``, ``[str]``, ``[[str, int]]``, ``{node: str}``."""
    if isinstance(t, Scalar):
        return t.name
    if isinstance(t, ListOf):
        return f"[{describe(t.item)}]"
    if isinstance(t, Pair):
        return f"[{t.item.name}, {t.item.name}]"
    if isinstance(t, MapOf):
        return f"{{node: {describe(t.value)}}}"
    return t.name


def type_problems(t: Type, value: Any, where: str) -> list[str]:
    """Why ``value`` (parsed JSON) is not of type ``t``; empty when it is. ``float`` accepts a
    whole number (JSON has one number type); ``bool`` is never a number."""
    if isinstance(t, Scalar):
        ok = {
            "str": isinstance(value, str),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "long": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, (int, float)) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
        }[t.name]
        return [] if ok else [f"{where}: expected {t.name}, got {value!r}"]
    if isinstance(t, Pair):
        if not isinstance(value, list) or len(value) != 2:
            return [f"{where}: expected a pair {describe(t)}, got {value!r}"]
        return type_problems(t.item, value[0], f"{where}[0]") + type_problems(t.item, value[1], f"{where}[1]")
    if isinstance(t, ListOf):
        if not isinstance(value, list):
            return [f"{where}: expected a list {describe(t)}, got {value!r}"]
        return [p for i, v in enumerate(value) for p in type_problems(t.item, v, f"{where}[{i}]")]
    if isinstance(t, MapOf):
        if not isinstance(value, dict):
            return [f"{where}: expected an object {describe(t)}, got {value!r}"]
        return [p for k, v in value.items() for p in type_problems(t.value, v, f"{where}.{k}")]
    if not isinstance(value, dict):
        return [f"{where}: expected an object ({t.name}), got {value!r}"]
    return fields_problems(t.fields, value, where)


def fields_problems(fields: tuple[Field, ...], values: dict[str, Any], where: str) -> list[str]:
    """Unknown names, missing required ones, nulls where none is allowed, wrong types."""
    known = {f.name: f for f in fields}
    out = [f"{where}.{name}: not registered" for name in values if name not in known]
    for f in fields:
        if f.name not in values:
            if f.required:
                out.append(f"{where}.{f.name}: required, missing")
        elif values[f.name] is None:
            if not f.nullable:
                out.append(f"{where}.{f.name}: null, not allowed")
        else:
            out += type_problems(f.type, values[f.name], f"{where}.{f.name}")
    return out
