"""Real runs checked against the event registry (:mod:`rmqemu.events`, which docs/events.md is
rendered from): every kind a run wrote must be registered, every field of it too, with the
registered type, and every required field present; and the report's typed reader reads every
line of every file as it is."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from rmqemu import events
from rmqemu.emulator.testing import read_events
from rmqemu.reports.core.lines import strict
from rmqemu.reports.core.schema import EVENTS

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


def contract_problems(run_dir: Path, upgrade: bool = False) -> list[str]:
    """One line per distinct problem of the run's lines (:func:`rmqemu.events.problems`: an
    unregistered kind or field, a wrong type, a missing required field, a forbidden null), with
    how many lines had it; empty for a run that keeps the contract. ``upgrade``: each line as the
    report converts a line of an older run first (:func:`rmqemu.events.upgrade`)."""
    seen: Counter[str] = Counter()
    for ev in read_events(run_dir):
        for problem in events.problems(events.upgrade(ev) if upgrade else ev):
            seen[problem] += 1
    lines = [f"{problem} ({n} line(s))" for problem, n in sorted(seen.items())]
    return lines[:MAX_SHOWN] + ([f"... and {len(lines) - MAX_SHOWN} more"] if len(lines) > MAX_SHOWN else [])


def kinds_written(run_dir: Path) -> set[str]:
    """The kinds a run wrote (to check that it exercised the kinds a test expects)."""
    return {ev.get("kind", "") for ev in read_events(run_dir)}


def unreadable_files(run_dir: Path) -> list[str]:
    """The run's files the report's typed reader refuses to read whole as they are (every line,
    every registered column, nothing converted or dropped), each with the reader's reason."""
    out = []
    for path in sorted((run_dir / "events").glob("*.jsonl")) + [run_dir / "faults.jsonl"]:
        data = path.read_bytes()
        try:
            rows = strict(data, EVENTS.names).num_rows
        except ValueError as exc:  # pyarrow.ArrowInvalid
            out.append(f"{path.name}: {exc}")
            continue
        lines = sum(1 for line in data.split(b"\n") if line.strip())
        if rows != lines:
            out.append(f"{path.name}: {rows} rows of {lines} lines")
    return out
