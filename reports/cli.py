"""``rmqemu report``: the entry point, and the only place a SparkSession is built.

    rmqemu report RUN_DIR [RUN_DIR ...] [--master URL] [--out DIR] [--expect FILE] [--junit FILE]
    rmqemu report --compare RUN_A RUN_B ... [--out FILE.csv|FILE.html] [--recompute]

Exit codes (docs/design.md §8): 0 done, every expectation held (or there were none); 1 an
expectation failed (each failure printed with its value); 2 bad input (missing run dir or
manifest, unreadable or empty logs, a malformed expectation or a metric path that does not
exist), one line naming the file; 3 the job itself failed (``RMQEMU_DEBUG=1`` shows the
traceback). Stages are announced on stderr because Spark start-up alone takes seconds.

Callers that already hold a session (tests, notebooks) pass it as ``obj={"spark": s}``
to click: it is used as is and not stopped.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from rmqemu.errors import ExpectationError, RunInputError
from rmqemu.reports.session import SMALL_INPUT_BYTES, THREADS, BackgroundSession, build_session, stop_session


class _Progress:
    """``[report 3.2s] stage...`` lines on stderr."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self, message: str) -> None:
        click.echo(f"[report {time.perf_counter() - self.t0:5.1f}s] {message}", err=True)


class _Sessions:
    """The session given by the caller, one started in the background (owned: stopped at
    the end), or one built on first use and stopped at the end."""

    def __init__(self, given: Any, master: str | None, progress: _Progress) -> None:
        self.given, self.master, self.progress, self.built = given, master, progress, None
        self.background: BackgroundSession | None = None

    def start(self, small_input: bool = False) -> None:
        """Start building the session on a thread (its JVM starts while the report's modules
        are imported), unless one is given or started already."""
        if self.given is None and self.background is None:
            self.progress(f"starting Spark ({self.master or 'local[*]'})")
            self.background = BackgroundSession(self.master, small_input)

    def get(self, small_input: bool = False) -> Any:
        if self.given is not None:
            return self.given
        if self.background is not None:
            return self.background.get()
        if self.built is None:
            self.progress(f"starting Spark ({self.master or 'local[*]'})")
            self.built = build_session(self.master, small_input=small_input)
        return self.built

    def close(self) -> None:
        if self.background is not None:
            self.background.close()
        if self.built is not None:
            stop_session(self.built)


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(code)


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, metavar="RUN_DIR...")
@click.option("--master", default=None, help="Spark master URL (default local[*]; e.g. spark://host:7077).")
@click.option("--out", default=None, help="Report directory (default RUN_DIR/report); "
              "with --compare a .csv or .html file for the table.")
@click.option("--compare", is_flag=True, help="Show the headline metrics of several runs side by side.")
@click.option("--recompute", is_flag=True, help="With --compare: recompute metrics even where "
              "report/metrics.json exists.")
@click.option("--parquet/--no-parquet", default=True, show_default=True,
              help="Write the derived tables as Parquet under OUT/parquet.")
@click.option("--threads", default=THREADS, show_default=True, type=click.IntRange(1, 64),
              help="Plots drawn at once, each in a process of its own, at most one per core "
              "(1: one after another, in this process).")
@click.option("--expect", "expect_file", type=click.Path(path_type=Path), default=None,
              help="Judge the runs by this YAML file's expect: (default: each run's topology's expect:, if any).")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path), default=None,
              help="Write the verdicts as JUnit XML: one test case per expectation.")
@click.pass_context
def report_command(ctx: click.Context, run_dirs: tuple[str, ...], master: str | None, out: str | None,
                   compare: bool, recompute: bool, parquet: bool, threads: int, expect_file: Path | None,
                   junit_file: Path | None) -> None:
    """Analyse runs with Spark: metrics.json, report.html, PNG plots, Parquet tables.

    Reads RUN_DIR/events/*.jsonl, faults.jsonl and manifest.json (RUN_DIR: a local path,
    or a URI pyarrow reads, which needs --out). Several RUN_DIRs are analysed in one
    Spark job, each run's report written to its RUN_DIR/report.

    With --compare RUN_A RUN_B ...: one table of the headline metrics side by side,
    from each run's report/metrics.json (computed where missing).

    Exit 0 when every expectation held, 1 when one failed, 2 on bad input, 3 when the job failed.
    """
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}
    progress = _Progress()
    sessions = _Sessions(obj.get("spark"), master, progress)
    failed = 0
    try:
        if compare:
            if expect_file or junit_file:
                raise click.UsageError("--expect and --junit judge runs being reported, not --compare")
            _compare(list(run_dirs), out, recompute, sessions, progress)
        else:
            failed = _report(list(run_dirs), out, parquet, sessions, progress, threads, expect_file, junit_file)
    except (RunInputError, ExpectationError) as exc:
        _fail("; ".join(line.strip() for line in str(exc).splitlines() if line.strip()), 2)
    except (click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:  # a Spark or plotting failure: one line unless debugging
        if os.environ.get("RMQEMU_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        if "JAVA_GATEWAY_EXITED" in first:  # no usable java: say what Spark needs
            java = os.environ.get("JAVA_HOME")
            first += (" Spark needs Java 17 or newer: `java` on PATH or JAVA_HOME set"
                      + (f" (JAVA_HOME is {java})" if java else "") + ".")
        _fail(f"report failed: {type(exc).__name__}: {first} (RMQEMU_DEBUG=1 for the traceback)", 3)
    finally:
        sessions.close()
    if failed:
        raise click.exceptions.Exit(1)


def _report(run_dirs: list[str], out: str | None, parquet: bool, sessions: _Sessions, progress: _Progress,
            threads: int, expect_file: Path | None, junit_file: Path | None) -> int:
    """Report every run; the number of runs that failed an expectation."""
    from rmqemu.reports import expect
    from rmqemu.reports.manifest import read_manifest
    from rmqemu.reports.rundir import default_out, event_files

    if out and len(run_dirs) > 1:
        raise click.UsageError("--out names one report directory: give one RUN_DIR (each run's report "
                               "goes to RUN_DIR/report otherwise)")
    out_dirs = [Path(out)] if out else [default_out(rd) for rd in run_dirs]
    size, local = 0, True
    for run_dir in run_dirs:
        if "://" not in run_dir or run_dir.startswith("file://"):  # fail fast, before Spark starts
            read_manifest(None, run_dir)
            size += sum(s for _, s in event_files(run_dir))
        else:
            local = False
    given = expect.from_file(expect_file) if expect_file else None  # checked before Spark starts
    expects = [given or expect.from_run(rd) for rd in run_dirs]
    small = local and size < SMALL_INPUT_BYTES
    sessions.start(small)
    from rmqemu.reports.job import run_reports  # pandas, matplotlib: while the JVM starts
    from rmqemu.reports.summary import one_line
    from rmqemu.verdicts import judge

    results = run_reports(sessions.get(small), run_dirs, out_dirs, progress=progress,
                          parquet=parquet, workers=threads, expects=expects)
    judged, failed = [], 0
    for run_dir, res, rules in zip(run_dirs, results, expects, strict=True):
        progress(f"done: {run_dir if len(run_dirs) > 1 else ''}{': ' if len(run_dirs) > 1 else ''}"
                 f"{one_line(res.metrics)}")
        verdicts = judge(rules.rules, res.metrics, rules.source) if rules else []
        bad = [v for v in verdicts if not v.passed]
        failed += bool(bad)
        judged.append((expect.describe(res.metrics), verdicts))
        (res.out_dir / "verdicts.json").write_text(json.dumps(expect.verdicts_json(rules, verdicts), indent=2) + "\n",
                                                   encoding="utf-8")
        if verdicts:
            click.echo(f"{'FAIL' if bad else 'PASS'} {res.metrics.get('run')}: {len(verdicts) - len(bad)} of "
                       f"{len(verdicts)} expectation(s) held (from {rules.source})", err=True)
            for v in bad:
                click.echo(f"  {v.line()}", err=True)
        click.echo(str(res.out_dir / "report.html"))
    if junit_file:
        expect.write_junit(junit_file, judged)
    return failed


def _compare(run_dirs: list[str], out: str | None, recompute: bool, sessions: _Sessions,
             progress: _Progress) -> None:
    from rmqemu.reports import compare
    from rmqemu.reports.job import compute_many

    if len(run_dirs) < 2:
        raise click.UsageError("--compare needs at least two run directories")
    missing = [rd for rd in run_dirs if recompute or compare.read_metrics(rd) is None]
    computed = compute_many(sessions.get(), missing, progress) if missing else {}
    runs = compare.gather(run_dirs, computed.__getitem__, recompute)
    headers, rows = compare.compare_table(runs)
    click.echo(compare.as_text(headers, rows))
    if out:
        compare.write(Path(out), headers, rows)
        progress(f"wrote {out}")
