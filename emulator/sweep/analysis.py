"""A sweep's analysis: every run's metrics in one Spark job, one row per run, a verdict per run
and per cell, and ``report/``: ``runs.csv``, ``runs.parquet`` and ``sweep.html`` with each
headline metric plotted against each varied key (median and spread over the seeds, failed
cells marked). docs/design.md §9, "Sweeps".
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rmqemu.emulator.sweep.runner import RunResult
from rmqemu.emulator.sweep.spec import SweepRun, SweepSpec
from rmqemu.verdicts import judge, value_at

#: metric path -> what the plots call it
HEADLINE: dict[str, str] = {
    "staleness.clients_total.stale_ms": "client route staleness, total (wall ms)",
    "staleness.clients_total.max_converged_ms": "slowest client convergence (wall ms)",
    "misrouted.total": "misrouted sends",
    "sends.ok": "ok sends",
    "sends.failed": "failed sends",
    "consumption.lost": "lost messages",
    "timing.lag_p99_ms": "worst node lateness p99 (wall ms)",
    "order.violations": "ordered messages out of order or consumed twice",
    "order.failed_sends.total": "failed ordered sends",
}


@dataclass
class SweepAnalysis:
    rows: list[dict[str, Any]]
    out_dir: Path
    files: list[Path]

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["verdict"] == "FAIL"]

    @property
    def broken(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["verdict"] == "BROKEN"]


def unanalysed(results: list[RunResult]) -> list[str]:
    """The run dirs of the finished runs whose analysis is not stored, or is older than the code
    or the run's files (:mod:`reports.stored`): what the sweep's Spark job must analyse."""
    from rmqemu.reports import stored

    return [str(r.run_dir) for r in results if r.exit_code == 0 and stored.load(str(r.run_dir)) is None]


def analyse(spark: Any, spec: SweepSpec, results: list[RunResult], out_dir: Path,
            compute: Callable[[Any, list[str]], dict[str, dict[str, Any]]] | None = None) -> SweepAnalysis:
    """The metrics of every run that finished: stored ones reused, the others computed in one
    Spark job on ``spark`` (``reports.job.compute_many``, or ``compute`` in tests of what follows
    it) and stored; then the tables and the page. ``spark`` may be None when every run's
    analysis is stored (:func:`unanalysed` is empty)."""
    from rmqemu.reports import stored

    if compute is None:
        from rmqemu.reports.job import compute_many as compute  # Spark: only the analysis needs it

    if [r.run_id for r in results] != [run.run_id for run in spec.runs()]:
        raise ValueError("analyse: one result per run of the grid, in grid order (as run_sweep returns them)")
    ok = [str(r.run_dir) for r in results if r.exit_code == 0]
    metrics = {d: doc for d in ok if (doc := stored.load(d)) is not None}
    missing = [d for d in ok if d not in metrics]
    if missing:
        computed = compute(spark, missing)
        for run_dir, doc in computed.items():
            stored.save(run_dir, doc)
        metrics.update(computed)
    rows = [_row(spec, run, r, metrics.get(str(r.run_dir))) for run, r in zip(spec.runs(), results, strict=True)]
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [_write_csv(rows, out_dir / "runs.csv"), _write_parquet(rows, out_dir / "runs.parquet")]
    figures = _plots(spec, rows, out_dir)
    page = out_dir / "sweep.html"
    page.write_text(render_page(spec, rows, figures), encoding="utf-8")
    return SweepAnalysis(rows, out_dir, [*files, *figures, page])


def _row(spec: SweepSpec, run: SweepRun, result: RunResult, metrics: dict[str, Any] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"run_id": result.run_id, "cell": run.cell.index, "seed": run.seed, **run.cell.values,
                           "exit_code": result.exit_code, "fell_behind": result.fell_behind}
    columns = list(dict.fromkeys([*HEADLINE, "timing.healthy", *(e.path for e in spec.expect)]))
    if metrics is None:
        row.update({"verdict": "BROKEN", "failed_expectations": f"the run exited {result.exit_code}"})
        row.update({path: None for path in columns})
        return row
    for path in columns:
        value = value_at(metrics, path)
        row[path] = value if isinstance(value, (int, float, bool)) else None
    verdicts = judge(spec.expect, metrics, "expect") if spec.expect else []
    missed = [v.line() for v in verdicts if not v.passed]
    row.update({"verdict": "FAIL" if missed else "PASS", "failed_expectations": "; ".join(missed)})
    return row


def _write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["run_id"])
        writer.writeheader()
        writer.writerows(rows)
    return path


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(rows[0]) if rows else ["run_id"]
    table = pa.table({c: _column([r.get(c) for r in rows]) for c in columns})
    pq.write_table(table, path)
    return path


def _column(values: list[Any]) -> list[Any]:
    """A column as Parquet takes it: one type (numbers may mix ints and floats), else text; a
    varied value that is a list or a mapping as its text."""
    kinds = {"num" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
             for v in values if v is not None}
    if len(kinds) <= 1 and kinds <= {"num", "bool", "str"}:
        return [float(v) if "num" in kinds and isinstance(v, int) and any(isinstance(x, float) for x in values)
                else v for v in values]
    return [None if v is None else str(v) for v in values]


def cell_summary(spec: SweepSpec, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell: its values, runs, verdict (FAIL if any run failed or broke), median of each headline metric."""
    by_cell: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_cell[r["cell"]].append(r)
    out = []
    for cell in spec.cells():
        mine = by_cell.get(cell.index, [])
        verdicts = {r["verdict"] for r in mine}
        summary = {"cell": cell.index, "label": cell.label(), "runs": len(mine),
                   "verdict": "BROKEN" if "BROKEN" in verdicts else "FAIL" if "FAIL" in verdicts else "PASS"}
        for path in HEADLINE:
            values = [r[path] for r in mine if isinstance(r[path], (int, float))]
            summary[path] = statistics.median(values) if values else None
        out.append(summary)
    return out


def _plots(spec: SweepSpec, rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One PNG per varied key: a panel per headline metric, the median over the runs at each value
    of the key with the spread (min to max), and the runs that failed an expectation in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for i, key in enumerate(spec.vary):
        values = spec.vary[key]
        rows_n = -(-len(HEADLINE) // 4)
        fig, axes = plt.subplots(rows_n, 4, figsize=(16, 3.25 * rows_n), squeeze=False)
        for ax, (path, label) in zip(axes.flat, HEADLINE.items(), strict=False):
            xs, med, lo, hi = [], [], [], []
            for j, v in enumerate(values):
                ys = [r[path] for r in rows if r.get(key) == v and isinstance(r[path], (int, float))]
                if ys:
                    xs.append(j)
                    med.append(statistics.median(ys))
                    lo.append(med[-1] - min(ys))
                    hi.append(max(ys) - med[-1])
                bad = [r[path] for r in rows if r.get(key) == v and r["verdict"] != "PASS"
                       and isinstance(r[path], (int, float))]
                ax.scatter([j] * len(bad), bad, color="#c0392b", marker="x", zorder=3)
            ax.errorbar(xs, med, yerr=[lo, hi], fmt="o-", capsize=4, color="#2c3e50")
            ax.set_xticks(range(len(values)), [str(v) for v in values])
            ax.set_title(label, fontsize=9)
            ax.set_xlabel(key, fontsize=8)
        for ax in list(axes.flat)[len(HEADLINE):]:
            ax.axis("off")
        fig.suptitle(f"{spec.name}: median and spread over {len(spec.seeds)} seed(s); x = a run that failed",
                     fontsize=10)
        fig.tight_layout()
        path = out_dir / f"vary-{i}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        files.append(path)
    return files


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>sweep {{ spec.name }}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}img{max-width:100%}\
.PASS{color:#1e8449}
.FAIL,.BROKEN{color:#c0392b;font-weight:bold}h1 span{font-size:60%}</style></head><body>
<h1>{{ verdict }} <span>sweep {{ spec.name }}: {{ cells|length }} cell(s) x {{ spec.seeds|length }} seed(s)</span></h1>
<p>Topology {{ spec.topology_path }}; expectations:
{% for e in spec.expect %}<code>{{ e.path }} {{ e.describe() }}</code>{% if not loop.last %}, {% endif %}\
{% else %}none{% endfor %}{% if spec.expect %} (from {{ spec.expect_from }}){% endif %}.</p>
{% for f in figures %}<p><img src="{{ f.name }}" alt="headline metrics against {{ f.stem }}"></p>{% endfor %}
<h2>Cells</h2><table><tr><th>cell</th><th>values</th><th>runs</th><th>verdict</th>
{% for p in headline %}<th>{{ headline[p] }} (median)</th>{% endfor %}</tr>
{% for c in cells %}<tr><td>{{ c.cell }}</td><td style="text-align:left">{{ c.label }}</td><td>{{ c.runs }}</td>
<td class="{{ c.verdict }}">{{ c.verdict }}</td>{% for p in headline %}<td>{{ fmt(c[p]) }}</td>{% endfor %}</tr>\
{% endfor %}
</table>
<h2>Runs</h2><table><tr><th>run</th><th>seed</th><th>verdict</th><th>why</th>\
{% for p in headline %}<th>{{ p }}</th>{% endfor %}</tr>
{% for r in rows %}<tr><td><a href="../{{ r.run_id }}/">{{ r.run_id }}</a></td><td>{{ r.seed }}</td>
<td class="{{ r.verdict }}">{{ r.verdict }}</td><td style="text-align:left">{{ r.failed_expectations }}</td>
{% for p in headline %}<td>{{ fmt(r[p]) }}</td>{% endfor %}</tr>{% endfor %}</table>
<p>One row per run: runs.csv, runs.parquet. A run's own report: <code>rmqemu report DIR</code>.</p></body></html>
"""


def render_page(spec: SweepSpec, rows: list[dict[str, Any]], figures: list[Path]) -> str:
    """sweep.html, from a Jinja2 template with autoescaping (every value comes from user files)."""
    import jinja2

    cells = cell_summary(spec, rows)
    verdicts = {c["verdict"] for c in cells}
    verdict = "BROKEN" if "BROKEN" in verdicts else "FAIL" if "FAIL" in verdicts else "PASS"
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return env.from_string(PAGE).render(spec=spec, rows=rows, cells=cells, figures=figures, verdict=verdict,
                                        headline=HEADLINE, fmt=_fmt)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)
