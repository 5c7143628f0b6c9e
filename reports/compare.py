"""``rmqemu report --compare RUN_A RUN_B ...``: headline metrics of several runs side by side.

Reads each run's ``report/metrics.json`` when it exists (no Spark needed), else computes
the metrics (the caller passes a function that does, so Spark starts only if a run needs
it). Output: an aligned text table, or CSV / HTML files of the same table.
"""
from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmqemu.errors import RunInputError
from rmqemu.reports.html import CSS, esc
from rmqemu.reports.summary import fmt_num, headline_values

Metrics = dict[str, Any]


def read_metrics(run_dir: str) -> Metrics | None:
    """``RUN_DIR/report/metrics.json`` if present; ``None`` if the run has no report yet."""
    if "://" in run_dir and not run_dir.startswith("file://"):
        return None  # a remote run: computed by the report job, whose tasks read it
    root = Path(run_dir.removeprefix("file://"))
    if not root.is_dir():
        raise RunInputError(f"{root}: run directory does not exist")
    path = root / "report" / "metrics.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInputError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise RunInputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or "scale" not in doc or "staleness" not in doc:
        raise RunInputError(f"{path}: not an rmqemu metrics.json (no 'scale'/'staleness')")
    return doc


def gather(run_dirs: list[str], compute: Callable[[str], Metrics],
           recompute: bool = False) -> list[tuple[str, Metrics]]:
    """``(column name, metrics)`` per run; names are run ids, made unique with the dir."""
    named: list[tuple[str, Metrics]] = []
    for rd in run_dirs:
        m = None if recompute else read_metrics(rd)
        if m is None:
            m = compute(rd)
        named.append((str(m.get("run") or Path(rd).name), m))
    counts: dict[str, int] = {}
    for name, _ in named:
        counts[name] = counts.get(name, 0) + 1
    return [(f"{n} ({rd})" if counts[n] > 1 else n, m) for (n, m), rd in zip(named, run_dirs, strict=True)]


def compare_table(runs: list[tuple[str, Metrics]]) -> tuple[list[str], list[list[Any]]]:
    """Headers ``["metric", run1, run2, ...]`` and one row per headline value."""
    columns = [dict(headline_values(m)) for _, m in runs]
    labels = [label for label, _ in headline_values(runs[0][1])] if runs else []
    return ["metric", *[n for n, _ in runs]], [[label, *[c.get(label) for c in columns]] for label in labels]


def as_text(headers: list[str], rows: list[list[Any]]) -> str:
    """Aligned plain-text table (numbers right-aligned) for stdout."""
    cells = [headers] + [[r[0], *[fmt_num(v) for v in r[1:]]] for r in rows]
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(headers))]
    lines = []
    for j, row in enumerate(cells):
        parts = [str(row[0]).ljust(widths[0])] + [str(v).rjust(w) for v, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(parts).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write(path: Path, headers: list[str], rows: list[list[Any]]) -> None:
    """``.csv`` (raw numbers) or ``.html`` (formatted); anything else is refused."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".html", ".htm"):
        raise RunInputError(f"{path}: --out of --compare must end in .csv or .html")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".csv":
            with open(path, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(headers)
                w.writerows([[("" if v is None else v) for v in r] for r in rows])
            return
        body = "".join(f"<tr><td>{esc(r[0])}</td>" + "".join(f"<td class=num>{esc(fmt_num(v))}</td>" for v in r[1:])
                       + "</tr>" for r in rows)
        head = "".join(f"<th>{esc(h)}</th>" for h in headers)
        path.write_text(f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>rmqemu runs compared"
                        f"</title><style>{CSS}</style></head><body><h1>rmqemu runs compared</h1>"
                        f"<table><tr>{head}</tr>{body}</table></body></html>\n", encoding="utf-8")
    except OSError as exc:
        raise RunInputError(f"{path}: cannot write ({exc.strerror})") from None
