"""A node's file I/O: its JSON-lines event log and its store directory.

Kept out of the roles (they return ``Emit`` / ``Persist`` / ``Append`` actions) and out of the
runtime loop's logic, so both stay testable; only :mod:`emulator.node.runtime` calls these.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO, Callable, Protocol, TextIO

from rmqemu import jsonlines, wire_json
from rmqemu.emulator.node.clock import host_ms
from rmqemu.emulator.transport._guard import EventGate
from rmqemu.events import check as check_event


class EventLog:
    """``events/<node>.jsonl``: one JSON object per line, flushed per line (docs/design.md §6), so
    a killed node loses at most the line it was writing."""

    def __init__(self, path: Path | None, node: str, local_ms: Callable[[], float],
                 host: Callable[[], float] = host_ms, local_at: Callable[[float], float] | None = None) -> None:
        self.node = node
        self.local_ms = local_ms
        self.host = host
        self.local_at = local_at  # the node's clock at a host reading: ts and local_ms from one reading
        self.file: BinaryIO | None = None
        if path is not None:
            # a restarted node: its last run's torn line stays one bad line (docs/design.md §6),
            # not glued to our first
            ended = jsonlines.ends_a_line(path)
            self.file = open(path, "ab")
            if not ended:
                self.file.write(b"\n")
        self.written = 0
        self.bad_request_gate = EventGate()

    def write(self, kind: str, fields: dict[str, Any], node: str | None = None) -> dict[str, Any]:
        """Append one line; an unregistered kind or field raises ``ValueError`` (:mod:`rmqemu.events`).
        ``node``: the line's node if not this one (a real client, seen from the wire).

        A ``wire.bad_frame`` a role emits (a request whose header its handler refused: it has a
        ``code``) is rate-limited per peer like the transport's undecodable frames, so a flood of
        well-formed but bad requests cannot fill the disk either."""
        if kind == "wire.bad_frame" and "code" in fields:
            suppressed = self.bad_request_gate.admit(fields.get("peer"))
            if suppressed is None:
                return {"kind": kind, **fields}  # held back, not written
            fields = {**fields, "suppressed": suppressed}
        check_event(kind, fields)
        ts = self.host()
        local = self.local_at(ts) if self.local_at is not None else self.local_ms()
        event = {"ts": ts, "node": node or self.node, "kind": kind, "local_ms": local, **fields}
        if self.file is not None:
            self.file.write(wire_json.dumps_line(event))
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

    def close(self) -> None: ...


class StoreDir:
    """The node's store directory (a broker's ``store/<node>/``: ``config/topics.json``, queues).

    A broker appends a line per message stored (and a slave per message replicated), so the hot
    path keeps what it can: resolved paths by relpath, and the files being appended to open (up
    to :data:`MAX_OPEN_APPENDS`), each append still written and flushed at once. Measured on the
    16-node capacity shape at 0.05: opening, writing and closing per append, with a ``pathlib``
    path built per call, was about a tenth of a master's CPU.
    """

    MAX_OPEN_APPENDS = 256

    def __init__(self, root: Path | None) -> None:
        self.root = root
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        self._paths: dict[str, str] = {}
        self._appending: dict[str, TextIO] = {}
        self._persisted: dict[str, tuple[str | None, str | None]] = {}  # relpath -> (.bak, file) as we wrote them

    def _path(self, relpath: str) -> str:
        path = self._paths.get(relpath)
        if path is not None:
            return path
        if self.root is None:
            raise RuntimeError("this node has no store directory")
        if os.path.isabs(relpath) or ".." in relpath.split("/"):  # strings, not pathlib: a broker
            raise ValueError(f"store path {relpath!r} leaves the store directory")  # probes ~1000 at start
        path = self._paths[relpath] = os.path.join(self.root, relpath)
        return path

    def read(self, relpath: str) -> str | None:
        """The file's text; None when it does not exist.

        A config file that is empty or unreadable falls back to ``<file>.bak`` as
        ``ConfigManager.load`` does (docs/rocketmq-model.md §2.6). A JSON-lines log (``.jsonl``,
        the queue files) is append-only and has no ``.bak``: it is read as it is, newlines
        untouched, and a character a kill cut in half (only ever in its torn last line, which
        the reader drops: docs/design.md §6) reads as U+FFFD instead of losing the file."""
        if self.root is None:
            return None
        path = self._path(relpath)
        if relpath.endswith(".jsonl"):
            try:
                with open(path, "rb") as b:
                    return b.read().decode("utf-8", errors="replace")
            except FileNotFoundError:
                return None
        for candidate in (path, path + ".bak"):
            try:
                with open(candidate, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if text.strip():
                return text
        return None

    def persist(self, relpath: str, text: str) -> None:
        """``MixAll.string2File``: write ``.tmp``, keep the old content as ``.bak``, then rename.

        A write that would change nothing on disk is skipped: when the file and its ``.bak``
        both already hold ``text`` (a slave persists the offsets it syncs every 10 s, a master
        its consumer offsets every 5 s, mostly unchanged)."""
        previous, last = self._persisted.get(relpath, (None, None))
        if text == last == previous:
            return
        self._persisted[relpath] = (last, text)
        path = self._path(relpath)
        self._close_append(relpath)
        if not os.path.isdir(self.root):  # type: ignore[arg-type]  # _path checked it is set
            return  # the run directory was deleted under us: recreating it would leave a ghost run
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
        if os.path.exists(path):
            os.replace(path, path + ".bak")
        os.replace(tmp, path)

    def append(self, relpath: str, lines: tuple[str, ...]) -> None:
        if self._persisted:
            self._persisted.pop(relpath, None)  # what persist wrote is no longer the whole content
        f = self._appending.get(relpath)
        if f is None:
            if len(self._appending) >= self.MAX_OPEN_APPENDS:
                self.close()
            path = self._path(relpath)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            jsonlines.cut_torn_line(path)  # a kill's half line must not swallow the next one
            f = self._appending[relpath] = open(path, "a", encoding="utf-8")
        f.write("".join(line if line.endswith("\n") else line + "\n" for line in lines))
        f.flush()

    def _close_append(self, relpath: str) -> None:
        f = self._appending.pop(relpath, None)
        if f is not None:
            f.close()

    def close(self) -> None:
        """Close the files kept open for appending (every line is already flushed)."""
        for relpath in list(self._appending):
            self._close_append(relpath)
