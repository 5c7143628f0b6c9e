"""The report's SparkSession: built once at an entry point (``rmqemu report``, ``launch
--report``, ``rmqemu sweep``, the pytest plugin, the benchmarks), passed to the job
(:mod:`reports.job`), stopped with its JVM; and one started on a thread.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from rmqemu.reports.jvm_archive import WRITE_TIMEOUT_S, archive_options

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
    from pyspark import SparkContext

    jvm = SMALL_INPUT_JVM if small_input else ""
    finish = None
    if local and SparkContext._active_spark_context is None:  # this call starts the JVM
        archive, finish = archive_options(jvm)
        jvm = f"{jvm} {archive}".strip()
    extra = {"spark.driver.extraJavaOptions": jvm} if jvm else {}
    if small_input and not local:  # the application's executors start as it does
        extra["spark.executor.extraJavaOptions"] = SMALL_INPUT_JVM
    for key, value in {**(LOCAL_CONF if local else {}), **extra, **(conf or {})}.items():
        b = b.config(key, value)
    try:
        spark = b.getOrCreate()
    except BaseException:
        if finish is not None:
            finish(None)  # no JVM wrote an archive: let another session write it
        raise
    if finish is not None:  # once the JVM has exited (stop_session)
        _AT_JVM_EXIT[SparkContext._gateway.proc.pid] = finish
    spark.sparkContext.setLogLevel("ERROR")
    return spark


#: What to do once a session's JVM has exited, by its pid (:func:`reports.jvm_archive.archive_options`).
_AT_JVM_EXIT: dict[int, Callable[[int | None], None]] = {}


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
    after = _AT_JVM_EXIT.pop(proc.pid, None)
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(max(timeout, WRITE_TIMEOUT_S) if after is not None else timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if after is not None:
        after(proc.returncode)


class BackgroundSession:
    """A report session built on a thread, so that its JVM starts while ``rmqemu report`` imports
    the report's own modules (pandas, matplotlib: seconds on a small host). ``small_input``:
    the JVM options of :func:`build_session`, fixed at start. ``rmqemu launch --report`` starts
    one only once every node has stopped: a JVM's start is seconds of CPU on every core, which
    beside a running cluster on a 2-core host made the nodes' timers late (bench/README.md)."""

    def __init__(self, master: str | None = None, small_input: bool = False) -> None:
        self.master, self.small_input = master, small_input
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, name="report-session", daemon=True)
        self._thread.start()

    def _build(self) -> None:
        try:
            self._session = build_session(self.master, small_input=self.small_input)
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
