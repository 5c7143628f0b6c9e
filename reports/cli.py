"""``rmqemu report``: the entry point, and the only place a SparkSession is built.

    rmqemu report RUN_DIR [RUN_DIR ...] [--master URL] [--out DIR]
    rmqemu report --compare RUN_A RUN_B ... [--out FILE.csv|FILE.html] [--recompute]

Bad input (missing run dir or manifest, unreadable or empty logs) prints one line naming
the file and exits 2; a failure of the job itself exits 1 (``RMQEMU_DEBUG=1`` shows the
traceback). Stages are announced on stderr because Spark start-up alone takes seconds.

Callers that already hold a session (tests, notebooks) pass it as ``obj={"spark": s}``
to click: it is used as is and not stopped. ``rmqemu launch --report`` passes a
:class:`BackgroundSession` (``obj={"background": b}``), started while the cluster ran.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import click

from rmqemu.errors import RunInputError


#: Below this many bytes of logs a run counts as small (about 100k events).
SMALL_INPUT_BYTES = 20 * 1024 * 1024

#: Settings every report session needs. Adaptive execution off: the report cuts the
#: lineage of its shared tables lazily (``reports.pipeline.reuse``), and with adaptive
#: execution Spark would run each such table's stages when it is cut, a job apiece, before
#: the one action that collects everything. Shuffles are sized by the input instead
#: (``spark.sql.shuffle.partitions``: 1 for a small input, 2 per core otherwise).
REPORT_CONF: dict[str, str] = {"spark.sql.adaptive.enabled": "false"}

#: Settings for a small input (hand-made logs, a quickstart run, many of them): its time is
#: per-job and per-task overhead, not data. One partition per shuffle and one scan split;
#: interpreted execution (compiling generated code costs more than it saves); and no
#: broadcast joins: each broadcast is a Spark job of its own, while a sort-merge join of a
#: few thousand rows is one more stage of the report's single job. (Hints are disabled
#: too: the interval lookups ask for broadcasts, right for a million sends.) The tests'
#: session uses the same settings (tests/reports/conftest.py).
SMALL_INPUT_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.files.minPartitionNum": "1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.optimizer.disableHints": "true",
}

#: Python threads driving independent Spark steps at once (``reports.tasks``): a small
#: run's time is the driver's per-step work, which threads spread over the cores.
THREADS = 4


def build_session(master: str | None = None, small_input: bool = False,
                  conf: dict[str, str] | None = None) -> Any:
    """A SparkSession for the report: ``local[*]`` by default, UI off, few shuffle
    partitions, driver on the loopback interface (a local job needs no other address,
    and a laptop's firewall or VPN then cannot get in the way). With a real cluster
    (``--master spark://...``) the driver must be reachable, so no loopback binding.

    ``small_input``: a hand-sized run spends its time compiling generated code, warming up
    the JIT and scheduling jobs, not computing: :data:`SMALL_INPUT_CONF` and the C1
    compiler make such a report several times faster (and would slow a million-event run
    down). :data:`REPORT_CONF` applies to every session.

    PySpark 4's DataFrame call-site tracking is off: with it, every ``F.col`` costs a
    dozen py4j round trips (about 3 ms here) to record where it was called, for error
    messages only; a report makes thousands of such calls.

    ``conf``: extra settings applied last (the benchmark scripts use it to try some)."""
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    master = master or "local[*]"
    local = master.startswith("local")
    if local:
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # read when the JVM starts
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName("rmqemu-report")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.log.level", "ERROR")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.python.sql.dataFrameDebugging.enabled", "false"))
    if local:
        b = (b.config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.memory", "2g"))
        if small_input:
            for key, value in SMALL_INPUT_CONF.items():
                b = b.config(key, value)
            # a young generation big enough that a small report rarely collects
            b = b.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmn512m")
    for key, value in REPORT_CONF.items():
        b = b.config(key, value)
    for key, value in (conf or {}).items():
        b = b.config(key, value)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_session(spark: Any, timeout: float = 30.0) -> None:
    """Stop the session *and its JVM*, and wait for the JVM to exit.

    ``SparkSession.stop()`` leaves PySpark's gateway JVM running until this Python process
    exits; the JVM then notices EOF on its stdin and exits on its own, but by then its
    parent is gone, so it lingers re-parented (a zombie where nothing reaps it). Closing
    its stdin here ends it while we can still wait for it."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM may be gone already
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _Progress:
    """``[report 3.2s] stage...`` lines on stderr."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self, message: str) -> None:
        click.echo(f"[report {time.perf_counter() - self.t0:5.1f}s] {message}", err=True)


class BackgroundSession:
    """A report session built on a thread, so the JVM starts while something else runs
    (``rmqemu launch --report``: while the cluster runs). Hand it to ``report_command`` as
    ``obj={"background": session}``; the report then owns it and stops it at the end.

    Built with the small-input settings by default (a launched run is mostly small, and
    the JVM's options are fixed at start); :func:`tune_session` sets the SQL settings for
    the real input size once it is known."""

    def __init__(self, master: str | None = None, small_input: bool = True) -> None:
        self.master, self.small_input = master, small_input
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, name="report-session", daemon=True)
        self._thread.start()

    def _build(self) -> None:
        try:
            self._session = build_session(self.master, self.small_input)
        except BaseException as exc:  # noqa: BLE001 - raised again by get()
            self._error = exc

    def get(self) -> Any:
        """The session, once built (waits); raises what building it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._session

    def close(self) -> None:
        """Stop the session and its JVM (waits for a build under way)."""
        self._thread.join()
        if self._session is not None:
            session, self._session = self._session, None
            try:
                stop_session(session)
            except Exception:  # noqa: BLE001 - a JVM killed with the run (Ctrl-C) is stopped already
                pass


def tune_session(spark: Any, small_input: bool) -> None:
    """Set the SQL settings of :func:`build_session` for an input of this size on a running
    session (:data:`REPORT_CONF`, and :data:`SMALL_INPUT_CONF` or Spark's defaults for
    them); JVM options are fixed at start."""
    for key, value in REPORT_CONF.items():
        spark.conf.set(key, value)
    for key, value in SMALL_INPUT_CONF.items():
        if small_input:
            spark.conf.set(key, value)
        elif key == "spark.sql.shuffle.partitions":
            spark.conf.set(key, str(2 * (os.cpu_count() or 2)))
        else:
            spark.conf.unset(key)


class _Sessions:
    """The session given by the caller, one started in the background (owned: stopped at
    the end), or one built on first use and stopped at the end."""

    def __init__(self, given: Any, master: str | None, progress: _Progress,
                 background: BackgroundSession | None = None) -> None:
        self.given, self.master, self.progress, self.built = given, master, progress, None
        self.background = background

    def get(self, small_input: bool = False) -> Any:
        if self.given is not None:
            return self.given
        if self.background is not None:
            self.progress("waiting for the Spark session started during the run")
            spark = self.background.get()
            tune_session(spark, small_input)
            return spark
        if self.built is None:
            self.progress(f"starting Spark ({self.master or 'local[*]'})")
            self.built = build_session(self.master, small_input)
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
              help="Threads for the drawing and the Parquet writes (1: one after another).")
@click.pass_context
def report_command(ctx: click.Context, run_dirs: tuple[str, ...], master: str | None, out: str | None,
                   compare: bool, recompute: bool, parquet: bool, threads: int) -> None:
    """Analyse runs with Spark: metrics.json, report.html, PNG plots, Parquet tables.

    Reads RUN_DIR/events/*.jsonl, faults.jsonl and manifest.json (RUN_DIR may be any
    path Spark reads; a remote one needs --out). Several RUN_DIRs are analysed in one
    Spark job, each run's report written to its RUN_DIR/report.

    With --compare RUN_A RUN_B ...: one table of the headline metrics side by side,
    from each run's report/metrics.json (computed where missing).
    """
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}
    progress = _Progress()
    sessions = _Sessions(obj.get("spark"), master, progress, obj.get("background"))
    try:
        if compare:
            _compare(list(run_dirs), out, recompute, sessions, progress)
        else:
            _report(list(run_dirs), out, parquet, sessions, progress, threads)
    except RunInputError as exc:
        _fail(str(exc), 2)
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
        _fail(f"report failed: {type(exc).__name__}: {first} (RMQEMU_DEBUG=1 for the traceback)", 1)
    finally:
        sessions.close()


def _report(run_dirs: list[str], out: str | None, parquet: bool, sessions: _Sessions, progress: _Progress,
            threads: int) -> None:
    from reports.job import default_out, run_reports
    from reports.load import event_paths, read_manifest
    from reports.summary import one_line

    if out and len(run_dirs) > 1:
        raise click.UsageError("--out names one report directory: give one RUN_DIR (each run's report "
                               "goes to RUN_DIR/report otherwise)")
    out_dirs = [Path(out)] if out else [default_out(rd) for rd in run_dirs]
    size, local = 0, True
    for run_dir in run_dirs:
        if "://" not in run_dir or run_dir.startswith("file://"):  # fail fast, before Spark starts
            read_manifest(None, run_dir)
            size += sum(os.path.getsize(p) for p in event_paths(run_dir))
        else:
            local = False
    small = local and size < SMALL_INPUT_BYTES
    results = run_reports(sessions.get(small), run_dirs, out_dirs, progress=progress, parquet=parquet,
                          workers=threads)
    for run_dir, res in zip(run_dirs, results):
        progress(f"done: {run_dir if len(run_dirs) > 1 else ''}{': ' if len(run_dirs) > 1 else ''}"
                 f"{one_line(res.metrics)}")
        click.echo(str(res.out_dir / "report.html"))


def _compare(run_dirs: list[str], out: str | None, recompute: bool, sessions: _Sessions,
             progress: _Progress) -> None:
    from reports import compare
    from reports.job import compute_many

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
