"""A node's file I/O: its JSON-lines event log and its store directory.

Kept out of the roles (they return ``Emit`` / ``Persist`` / ``Append`` actions) and out of the
runtime loop's logic, so both stay testable; only :mod:`emulator.node.runtime` calls these.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Protocol, TextIO

from emulator.node.clock import host_ms
from emulator.transport._guard import EventGate
from rmqemu.events import check as check_event


class EventLog:
    """``events/<node>.jsonl``: one JSON object per line, flushed per line (docs/design.md §6), so
    a killed node loses at most the line it was writing."""

    def __init__(self, path: Path | None, node: str, local_ms: Callable[[], float], host: Callable[[], float] = host_ms) -> None:
        self.node = node
        self.local_ms = local_ms
        self.host = host
        self.file: TextIO | None = open(path, "a", encoding="utf-8") if path is not None else None
        self.written = 0
        self.bad_request_gate = EventGate()

    def write(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Append one line; an unregistered kind or field raises ``ValueError`` (:mod:`rmqemu.events`).

        A ``wire.bad_frame`` a role emits (a request whose header its handler refused: it has a
        ``code``) is rate-limited per peer like the transport's undecodable frames, so a flood of
        well-formed but bad requests cannot fill the disk either."""
        if kind == "wire.bad_frame" and "code" in fields:
            suppressed = self.bad_request_gate.admit(fields.get("peer"))
            if suppressed is None:
                return {"kind": kind, **fields}  # held back, not written
            fields = {**fields, "suppressed": suppressed}
        check_event(kind, fields)
        event = {"ts": self.host(), "node": self.node, "kind": kind, "local_ms": self.local_ms(), **fields}
        if self.file is not None:
            self.file.write(json.dumps(event, default=str, separators=(",", ":")) + "\n")
            self.file.flush()
        self.written += 1
        return event

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class NodeStore(Protocol):
    """What the runtime needs of a node's store: :class:`StoreDir` on disk, or a test's
    in-memory store (``tests/roles/fakes.py`` FakeStore) under the same runtime."""

    def read(self, relpath: str) -> str | None: ...

    def persist(self, relpath: str, text: str) -> None: ...

    def append(self, relpath: str, lines: tuple[str, ...]) -> None: ...


class StoreDir:
    """The node's store directory (a broker's ``store/<node>/``: ``config/topics.json``, queues)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)

    def _path(self, relpath: str) -> Path:
        if self.root is None:
            raise RuntimeError("this node has no store directory")
        rel = Path(relpath)
        if rel.is_absolute() or ".." in rel.parts:  # a pure check: this runs for every message
            raise ValueError(f"store path {relpath!r} leaves the store directory")
        return self.root / rel

    def read(self, relpath: str) -> str | None:
        """The file's text; an empty or unreadable file falls back to ``<file>.bak`` as
        ``ConfigManager.load`` does (docs/rocketmq-model.md §2.6). None when neither exists."""
        if self.root is None:
            return None
        path = self._path(relpath)
        for candidate in (path, path.with_name(path.name + ".bak")):
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if text.strip():
                return text
        return None

    def persist(self, relpath: str, text: str) -> None:
        """``MixAll.string2File``: write ``.tmp``, keep the old content as ``.bak``, then rename."""
        path = self._path(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
        if path.exists():
            os.replace(path, path.with_name(path.name + ".bak"))
        os.replace(tmp, path)

    def append(self, relpath: str, lines: tuple[str, ...]) -> None:
        path = self._path(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write("".join(line if line.endswith("\n") else line + "\n" for line in lines))
            f.flush()
