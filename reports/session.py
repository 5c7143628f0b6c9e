"""The report's SparkSession: built once at an entry point (``rmqemu report``, ``launch
--report``, ``rmqemu sweep``, the pytest plugin, the benchmarks), passed to the job
(:mod:`reports.job`), stopped with its JVM; and one started in the background.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
from typing import Any

#: Plots the report's driver draws at once, in processes (``--threads``; at most one per core).
THREADS = 4

#: Settings of a local session: bound to the loopback interface, and room for the driver's share
#: of a large run's tables (its Python tasks hold the events; :mod:`reports.engine`).
LOCAL_CONF: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "2g",
}


#: JVM options of a session for a small input: the C1 compiler only (compiled sooner;
#: C2's slower, better code pays only over a long run) and the serial collector.
SMALL_INPUT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: Below this many bytes of logs a run counts as small (about 100k events).
SMALL_INPUT_BYTES = 20 * 1024 * 1024


def build_session(master: str | None = None, conf: dict[str, str] | None = None, small_input: bool = False) -> Any:
    """A SparkSession for the report: ``local[*]`` by default, UI and progress bars off, Spark's
    own logging at ERROR. A local session binds the loopback interface (a local job needs no
    other address, so a laptop's firewall or VPN cannot get in its way). The Python workers run
    this interpreter (they import rmqemu's analysis), on a cluster at the same path unless
    ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` names another with rmqemu installed; with a
    real cluster (``--master spark://...``) the driver must be reachable (docs/design.md §9).
    ``small_input``: a session for logs under :data:`SMALL_INPUT_BYTES` starts its JVMs (the
    driver's, and on a cluster the executors') with :data:`SMALL_INPUT_JVM` (bench/README.md has
    the figures). ``conf``: extra settings,
    applied last."""
    master = master or "local[*]"
    local = master.startswith("local")
    # the analysis runs in Python workers: this interpreter (rmqemu's), on a cluster at the
    # same path, unless PYSPARK_PYTHON or spark.pyspark.python says otherwise
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if local:
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # read when the JVM starts
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName("rmqemu-report")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.log.level", "ERROR")
         .config("spark.sql.session.timeZone", "UTC"))
    extra = {"spark.driver.extraJavaOptions": SMALL_INPUT_JVM} if small_input else {}
    if small_input and not local:  # the application's executors start as it does
        extra["spark.executor.extraJavaOptions"] = SMALL_INPUT_JVM
    for key, value in {**(LOCAL_CONF if local else {}), **extra, **(conf or {})}.items():
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
    """A report session built on a thread, so the JVM starts while something else runs: during
    ``rmqemu launch --report``, the cluster (``beside_cluster``: at a lower priority, then a
    warm-up); during ``rmqemu report``, the driver's own imports. Hand one to ``report_command``
    as ``obj={"background": session}``; the report then owns it and stops it at the end. A
    launched run is mostly small: ``small_input`` by default (JVM options are fixed at start).
    The warm-up analyses a tiny run (:func:`reports.engine.warm_up`), still at the lower
    priority: the report after the run then finds its Python workers up; meanwhile another
    thread imports the report's own modules (pandas, matplotlib: a second on a small host)."""

    def __init__(self, master: str | None = None, small_input: bool = True, beside_cluster: bool = True) -> None:
        self.master, self.small_input, self.beside_cluster = master, small_input, beside_cluster
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, name="report-session", daemon=True)
        self._thread.start()
        if beside_cluster:
            threading.Thread(target=self._import, name="report-imports", daemon=True).start()

    @staticmethod
    def _import() -> None:
        _lower_this_threads_priority()
        try:
            importlib.import_module("rmqemu.reports.job")
        except Exception:  # noqa: BLE001 - the report's own import says what is wrong
            pass

    def _build(self) -> None:
        try:
            if self.beside_cluster:
                _lower_this_threads_priority()
            self._session = build_session(self.master, small_input=self.small_input)
            if self.beside_cluster:
                from rmqemu.reports.engine import warm_up  # pyspark: imported on this thread, once started

                warm_up(self._session)
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
