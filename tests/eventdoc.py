"""Real runs checked against the event registry (:mod:`rmqemu.events`, which docs/events.md is
rendered from): every kind a run wrote must be registered, every field of it too, with the
registered type, and every required field present."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from rmqemu import events
from rmqemu.emulator.testing import read_events

MAX_SHOWN = 30


def unregistered(run_dir: Path) -> dict[str, set[str]]:
    """What ``run_dir`` wrote that the registry does not list: ``{kind: fields}``, with an empty
    set for a kind missing altogether."""
    missing: dict[str, set[str]] = {}
    for ev in read_events(run_dir):
        kind = ev.get("kind", "")
        decl = events.KINDS.get(kind)
        if decl is None:
            missing.setdefault(kind, set())
            continue
        extra = set(ev) - events.COMMON_NAMES - {f.name for f in decl.fields}
        if extra:
            missing.setdefault(kind, set()).update(extra)
    return missing


def contract_problems(run_dir: Path) -> list[str]:
    """One line per distinct problem of the run's lines (:func:`rmqemu.events.problems`: an
    unregistered kind or field, a wrong type, a missing required field, a forbidden null), with
    how many lines had it; empty for a run that keeps the contract."""
    seen: Counter[str] = Counter()
    for ev in read_events(run_dir):
        for problem in events.problems(ev):
            seen[problem] += 1
    lines = [f"{problem} ({n} line(s))" for problem, n in sorted(seen.items())]
    return lines[:MAX_SHOWN] + ([f"... and {len(lines) - MAX_SHOWN} more"] if len(lines) > MAX_SHOWN else [])


def kinds_written(run_dir: Path) -> set[str]:
    """The kinds a run wrote (to check that it exercised the kinds a test expects)."""
    return {ev.get("kind", "") for ev in read_events(run_dir)}
