"""The event reference (``docs/events.md``) as data, to check real runs against it: every
kind a run wrote, and every top-level field of it, must be documented there."""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from emulator.testing import read_events

DOC = Path(__file__).resolve().parents[1] / "docs" / "events.md"
COMMON = {"ts", "node", "kind", "local_ms"}


def documented() -> dict[str, set[str]]:
    """kind -> the field names its table rows mention (rows of one kind are merged)."""
    out: dict[str, set[str]] = defaultdict(set)
    in_kinds = False  # inside a table whose first column is "kind"
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 2:
            in_kinds = False
            continue
        if "`" not in cells[0]:
            in_kinds = in_kinds or cells[0] == "kind"
            continue
        kinds = re.findall(r"`([a-z]+(?:\.[a-z_]+)?)`", cells[0])
        if not in_kinds or not kinds:
            continue
        names = set(re.findall(r"`([a-z_]+)", " ".join(cells[1:])))
        for kind in kinds:
            out[kind] |= names
    return dict(out)


def undocumented(run_dir: Path) -> dict[str, set[str]]:
    """What ``run_dir`` wrote that the reference does not list: ``{kind: fields}``, with an
    empty set for a kind missing altogether."""
    doc = documented()
    missing: dict[str, set[str]] = {}
    for ev in read_events(run_dir):
        kind = ev.get("kind", "")
        if kind not in doc:
            missing.setdefault(kind, set())
            continue
        extra = set(ev) - COMMON - doc[kind]
        if extra:
            missing.setdefault(kind, set()).update(extra)
    return missing
