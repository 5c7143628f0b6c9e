"""Reading a topology file's YAML safely: bounded, alias-free, duplicate-free, with line numbers.

A topology is user input, so reading it must not be a way to exhaust the host (docs/design.md §5,
"Limits"). PyYAML's ``SafeLoader`` builds no arbitrary objects, but it still expands aliases (a
"billion laughs" file of a few hundred bytes becomes gigabytes of lists), recurses once per
nesting level (20,000 ``[`` raise ``RecursionError``) and lets a repeated key silently replace the
first. :class:`TopologyLoader` is a ``SafeLoader`` that refuses all three while composing, before
anything is expanded, and counts the nodes it composes. Every refusal is a
:class:`~rmqemu.errors.TopologyError` naming the file, the limit and the line.

The composed node tree is kept: :func:`line_of` maps a problem's path (``brokers[1].slaves``) back
to the line it came from, so schema errors carry line numbers too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from rmqemu.errors import TopologyError

#: Bigger than any sensible topology (the shipped ones are under 3 KB; 1,024 one-line topics are
#: ~40 KB) and small enough that pure-Python PyYAML reads it in about a second on this host.
MAX_FILE_BYTES = 256 * 1024
#: A topology nests at most ~5 levels (faults[0].groups[0][0]); 32 leaves room and keeps the
#: composer's recursion far from Python's limit of 1000 frames.
MAX_DEPTH = 32
#: YAML values (scalars, lists, mappings) in one file: 1,024 topics of 2 brokers are ~6,000.
#: PyYAML composes 10,000-17,000 a second here, so the cap bounds a refusal at ~1-2 s.
MAX_YAML_NODES = 20_000


class _Refused(Exception):
    """Raised inside the loader; :func:`read_yaml` turns it into a TopologyError line."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _line(node_or_mark: Any) -> int | None:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return mark.line + 1 if mark is not None and hasattr(mark, "line") else None


class TopologyLoader(yaml.SafeLoader):
    """``SafeLoader`` without aliases or duplicate keys, with depth and size caps."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(_line(event), f"YAML aliases (*{event.anchor}) are not allowed in a topology "
                                         "(write the value out; aliases can expand without bound)")
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise _Refused(_line(event), f"YAML anchors (&{event.anchor}) are not allowed in a topology "
                                         "(write the value out)")
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise _Refused(_line(event), f"more than {MAX_YAML_NODES} YAML values (limit; see docs/design.md §5)")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(_line(event), f"nested deeper than {MAX_DEPTH} levels (limit; see docs/design.md §5)")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: Node, deep: bool = False) -> Any:  # type: ignore[override]
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # int() of a 5,000-digit scalar, a bad timestamp
            raise _Refused(_line(node), f"value cannot be read: {str(exc).splitlines()[0][:160]}") from None

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:  # type: ignore[override]
        seen: dict[Any, int | None] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Refused(_line(key_node), "YAML merge keys (<<) are not allowed in a topology")
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key, False)
            except TypeError:  # an unhashable key ([a]: 1): the base class says so with its mark
                break
            if first is not False:
                raise _Refused(_line(key_node), f"duplicate key {key!r} (first at line {first})")
            seen[key] = _line(key_node)
        return super().construct_mapping(node, deep=deep)


def read_text(path: Path) -> str:
    """The file's text, refusing what is too big, binary or not UTF-8 (one problem line)."""
    source = str(path)
    with open(path, "rb") as f:  # read at most one byte past the cap, whatever st_size claims
        raw = f.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise TopologyError(source, [f"file is larger than the {MAX_FILE_BYTES} bytes a topology may be "
                                     "(limit; see docs/design.md §5)"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise TopologyError(source, [f"line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                                     f"{exc.start}); a topology is a YAML text file"]) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise TopologyError(source, [f"line {line}: a NUL byte; a topology is a YAML text file, not binary"])
    return text


def read_yaml(path: Path) -> tuple[Any, Node | None]:
    """Parse a topology file: its data and its composed node tree (for :func:`line_of`)."""
    source = str(path)
    loader = TopologyLoader(read_text(path))
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        where = f"line {exc.line}: " if exc.line else ""
        raise TopologyError(source, [where + exc.message]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TopologyError(source, [f"{where}not valid YAML ({problem})"]) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. int() of a 5,000-digit scalar
        raise TopologyError(source, [f"a value cannot be read: {str(exc).splitlines()[0][:200]}"]) from None
    finally:
        loader.dispose()
    return data, node


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def line_of(root: Node | None, path: str) -> int | None:
    """The line of the deepest YAML node along ``path`` (``brokers[1].slaves``, ``timing.scale``);
    None when the path does not start in the file."""
    node, line = root, None
    parts = _PATH_PART.findall(path)
    for i, (key, index) in enumerate(parts):
        child: Node | None = None
        if index and isinstance(node, SequenceNode) and int(index) < len(node.value):
            child = node.value[int(index)]
            line = _line(child)
        elif key and isinstance(node, MappingNode):
            rest = ".".join(k for k, _ in parts[i:])  # a dotted key (expect's metric paths)
            for k, v in node.value:
                if isinstance(k, ScalarNode) and k.value in (key, rest):
                    child, line = v, _line(k)
                    if k.value == rest:
                        return line
                    break
        if child is None:
            break
        node = child
    return line


def with_lines(problems: list[str], root: Node | None) -> list[str]:
    """``path: message`` -> ``path: message (line N)`` where the path is found in the file."""
    out = []
    for problem in problems:
        path = problem.split(": ", 1)[0]
        line = line_of(root, path) if root is not None and not path.startswith("line ") else None
        out.append(f"{problem} (line {line})" if line else problem)
    return out
