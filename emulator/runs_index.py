"""The history of runs under a root: every run and sweep, newest first, with its verdict and
headline numbers, for ``rmqemu runs`` and ``<root>/index.html`` (docs/design.md §8).

Read from what the runs left on disk (``manifest.json``, ``plan.json``, ``report/metrics.json``,
a sweep's ``sweep.json`` and ``report/runs.csv``); nothing is recomputed, so listing a thousand
runs costs file reads only. A run never reported shows ``-`` where its numbers would be.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: metric path -> column title, the numbers a run's line shows
HEADLINE = {
    "misrouted.total": "misrouted",
    "staleness.clients_total.stale_ms": "stale ms",
    "consumption.lost": "lost",
    "timing.healthy": "healthy",
}


@dataclass
class Entry:
    """One run or sweep directory."""

    kind: str  # "run" | "sweep"
    path: Path
    name: str
    started: str
    verdict: str  # PASS | FAIL | BROKEN | - (not judged)
    numbers: dict[str, Any] = field(default_factory=dict)
    detail: str = ""
    report: Path | None = None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def _short(value: Any) -> Any:
    return round(value, 1) if isinstance(value, float) else value


def _run_entry(run: Path, manifest: dict[str, Any]) -> Entry:
    metrics = _read_json(run / "report" / "metrics.json")
    plan = _read_json(run / "plan.json")
    started = manifest.get("started_ms")
    when = (_dt.datetime.fromtimestamp(started / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
            if isinstance(started, (int, float)) and started > 0 else "-")
    faults = len({s.get("fault_id") for s in plan.get("steps", [])}) if isinstance(plan, dict) else 0
    verdicts = _read_json(run / "report" / "verdicts.json")
    verdict = "-"
    if isinstance(verdicts, dict) and verdicts.get("verdict") in ("PASS", "FAIL"):
        verdict = verdicts["verdict"]
    numbers = ({title: _short(_get(metrics, path)) for path, title in HEADLINE.items()}
               if isinstance(metrics, dict) else {})
    detail = (f"seed {manifest.get('seed')}, scale {manifest.get('scale')}, {len(manifest.get('nodes') or {})} nodes, "
              f"{faults} fault(s)")
    report = run / "report" / "report.html"
    return Entry("run", run, str(manifest.get("name", run.name)), when, verdict, numbers, detail,
                 report if report.is_file() else None)


def _sweep_entry(sweep: Path, data: dict[str, Any]) -> Entry:
    grid = data.get("grid") or {}
    total = len(grid.get("cells") or [None]) * len(grid.get("seeds") or [None])
    done = sum(1 for p in sweep.iterdir() if (p / "done.json").is_file())
    verdict, failed = "-", 0
    runs_csv = sweep / "report" / "runs.csv"
    if runs_csv.is_file():
        with open(runs_csv, encoding="utf-8") as f:
            verdicts = [row.get("verdict") for row in csv.DictReader(f)]
        failed = sum(v in ("FAIL", "BROKEN") for v in verdicts)
        verdict = "BROKEN" if "BROKEN" in verdicts else "FAIL" if "FAIL" in verdicts else "PASS"
    when = str(data.get("created") or "-")
    page = sweep / "report" / "sweep.html"
    return Entry("sweep", sweep, str(grid.get("sweep", sweep.name)), when, verdict,
                 {"runs": f"{done}/{total}", "failed": failed}, f"{len(grid.get('cells') or [])} cell(s) x "
                 f"{len(grid.get('seeds') or [])} seed(s)", page if page.is_file() else None)


def collect(root: Path) -> list[Entry]:
    """Every run and sweep directly under ``root`` (a sweep's own runs are inside it), newest first."""
    entries = []
    if not root.is_dir():
        return entries
    for path in root.iterdir():
        if path.is_symlink() or not path.is_dir():
            continue  # "latest" points at a run listed anyway
        manifest = _read_json(path / "manifest.json")
        if isinstance(manifest, dict):
            entries.append(_run_entry(path, manifest))
            continue
        sweep = _read_json(path / "sweep.json")
        if isinstance(sweep, dict):
            entries.append(_sweep_entry(path, sweep))
    return sorted(entries, key=lambda e: (e.started, e.path.name), reverse=True)


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rmqemu runs</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px}th{background:#f3f3f3}.PASS{color:#1e8449}\
.FAIL,.BROKEN{color:#c0392b;font-weight:bold}</style>
</head><body><h1>Runs under {{ root }}</h1><p>{{ entries|length }} run(s) and sweep(s), newest first.</p>
<table><tr><th>when (UTC)</th><th>kind</th><th>name</th><th>verdict</th><th>numbers</th><th>detail</th>\
<th>directory</th></tr>
{% for e in entries %}<tr><td>{{ e.started }}</td><td>{{ e.kind }}</td>
<td>{% if e.report %}<a href="{{ e.report.relative_to(root) }}">{{ e.name }}</a>{% else %}{{ e.name }}{% endif %}</td>
<td class="{{ e.verdict }}">{{ e.verdict }}</td>
<td>{% for k, v in e.numbers.items() %}{{ k }} {{ "-" if v is none else v }}\
{% if not loop.last %}, {% endif %}{% endfor %}</td>
<td>{{ e.detail }}</td><td>{{ e.path.name }}</td></tr>{% endfor %}</table></body></html>
"""


def render_index(root: Path, entries: list[Entry]) -> str:
    """``<root>/index.html``: Jinja2 with autoescaping (names and values come from user files)."""
    import jinja2

    return jinja2.Environment(autoescape=True).from_string(PAGE).render(root=root, entries=entries)
