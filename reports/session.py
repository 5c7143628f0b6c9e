"""The report's SparkSession: its settings for the input's size, a clean stop, and one
started in the background. Built only at entry points (``rmqemu report``, ``launch
--report``, the benchmarks); the job takes it as a parameter (:mod:`reports.job`).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reports import jvm_archive, jvm_view


#: Below this many bytes of logs a run counts as small (about 100k events).
SMALL_INPUT_BYTES = 20 * 1024 * 1024

#: Settings every report session needs. Adaptive execution off: with it Spark would compute
#: the lazily cut node table (``reports.load``) when it is cut, a job of its own, and every
#: figure in bench/README.md was measured without it. Shuffles are sized by the input
#: instead (``spark.sql.shuffle.partitions``: 1 for a small input, 2 per core otherwise).
REPORT_CONF: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    # a join whose keys include ``run`` over two inputs hash-partitioned by ``run`` alone needs
    # no shuffle (every table is keyed by run, reports.intervals); by default Spark wants the
    # inputs partitioned by all the join keys and shuffles both
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    # local runs are read as one scan of their event files, named one by one (reports.load):
    # above 32 paths Spark lists them with a job of one task per path, about a second for
    # 20 runs, where the driver's own listing is a stat per file
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}

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

#: JIT thresholds of a small input's JVM (C1 only): compile a method after 50 calls (or 300
#: calls and loop iterations) where HotSpot waits for 200 (2,000), and a loop after 2,000
#: back-edges instead of 60,000.
SMALL_INPUT_JIT = ("-XX:Tier3InvocationThreshold=50 -XX:Tier3MinInvocationThreshold=20 "
                   "-XX:Tier3CompileThreshold=300 -XX:Tier3BackEdgeThreshold=2000")

#: Python threads driving independent Spark steps at once (``reports.tasks``): a small
#: run's time is the driver's per-step work, which threads spread over the cores.
THREADS = 4


def build_session(master: str | None = None, small_input: bool = False,
                  conf: dict[str, str] | None = None, record_archive: bool = False) -> Any:
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

    The driver JVM maps the class archive of this Java and Spark install when there is one
    (:mod:`reports.jvm_archive`: seconds off its start); ``record_archive`` (a short-lived
    session) has it write that archive at exit when there is none yet.

    ``conf``: extra settings applied last (the benchmark scripts use it to try some)."""
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    master = master or "local[*]"
    local = master.startswith("local")
    java_options = ""
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
            # a young generation big enough that a small report rarely collects; room for
            # the compiled code of many runs' plans (the 48 MB default filled up at 20 runs,
            # after which the JIT stops and everything runs interpreted); and methods
            # compiled after a quarter of the calls the JIT waits for by default, since a
            # small report's time is Spark's code running cold (first metrics() of a small
            # run 11.5 s against 12.5 s, five alternating processes each, bench/README.md)
            java_options = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmn512m -XX:ReservedCodeCacheSize=256m "
                            + SMALL_INPUT_JIT)
    archive_options, pending_archive = jvm_archive.jvm_options(record_archive)
    java_options = f"{java_options} {archive_options}".strip()
    if java_options:
        b = b.config("spark.driver.extraJavaOptions", java_options)
    for key, value in REPORT_CONF.items():
        b = b.config(key, value)
    for key, value in (conf or {}).items():
        b = b.config(key, value)
    spark = b.getOrCreate()
    jvm_view.install(spark)  # Java classes looked up once, not on every F.col (reports.jvm_view)
    spark._rmqemu_pending_archive = pending_archive  # published by stop_session
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_session(spark: Any, timeout: float = 30.0) -> None:
    """Stop the session *and its JVM*, and wait for the JVM to exit (and publish the class
    archive it wrote at exit, if it was recording one: :mod:`reports.jvm_archive`).

    ``SparkSession.stop()`` leaves PySpark's gateway JVM running until this Python process
    exits; the JVM then notices EOF on its stdin and exits on its own, but by then its
    parent is gone, so it lingers re-parented (a zombie where nothing reaps it). Closing
    its stdin here ends it while we can still wait for it."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    pending_archive = getattr(spark, "_rmqemu_pending_archive", None)
    if pending_archive is not None:  # the JVM writes the class archive as it exits
        timeout = max(timeout, jvm_archive.RECORDING_EXIT_S)
    spark.stop()
    if gateway is None:
        jvm_archive.publish(pending_archive, False)
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM may be gone already
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is None:
        jvm_archive.publish(pending_archive, False)
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    jvm_archive.publish(pending_archive, proc.returncode == 0)


#: How much nicer than the cluster's nodes a JVM started beside a running cluster is (Linux).
BACKGROUND_NICENESS = 10


def _lower_this_threads_priority() -> None:
    """Make this thread, and so the JVM it launches (a child inherits its creating thread's
    niceness on Linux), yield the CPU to the cluster's nodes.

    Why: the JVM's start is seconds of CPU on every core (class loading, JIT). Started at the
    nodes' priority beside a 7-node chaos quickstart at scale 0.01, it made their timers fire
    up to 24 ms late against a 5 ms threshold, so the launch warned that the run measured the
    host; without the session the same run was healthy. At niceness 10 the scheduler runs a
    waking node ahead of it; with the cluster stopped the JVM has the cores to itself anyway.
    Per thread, so the launcher's own loop keeps its priority."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere setpriority would lower the whole launcher
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICENESS)
    except OSError:  # not permitted here: the session starts at the usual priority
        pass


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
            _lower_this_threads_priority()
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


#: The call site every RDD of a report is named by (Spark's ``callSite.*`` local properties).
CALL_SITE = "rmqemu report"
_CALL_SITE_KEYS = ("callSite.short", "callSite.long")


def name_call_sites(spark: Any) -> None:
    """Name the Spark work this thread starts :data:`CALL_SITE` (a thread-local setting).

    Why: Spark records where every RDD was created by walking and formatting the creating
    thread's stack, unless the thread's ``callSite.*`` local properties name it. A report
    creates a few hundred RDDs (each operator of each executed plan); the stack walks were
    7 % of the driver's samples in a warm ``metrics()`` (bench/README.md). The names only
    label jobs in logs and the Spark UI."""
    for key in _CALL_SITE_KEYS:
        spark.sparkContext.setLocalProperty(key, CALL_SITE)


@contextmanager
def call_sites_named(spark: Any) -> Iterator[None]:
    """:func:`name_call_sites` for this thread while the block runs, then what was set
    before (the caller's later jobs keep their own names)."""
    sc = spark.sparkContext
    before = [sc.getLocalProperty(key) for key in _CALL_SITE_KEYS]
    name_call_sites(spark)
    try:
        yield
    finally:
        for key, value in zip(_CALL_SITE_KEYS, before):
            sc.setLocalProperty(key, value)  # None removes it
