"""A Spark standalone cluster of local processes for the tests: a master and workers started from
the pyspark install's ``bin/spark-class``, on loopback, on ports the system picks, and stopped
(with every executor they started) when the block ends, also when it fails."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pyspark

from rmqemu.reports.session import SMALL_INPUT_JVM

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
#: No REST submission server (a fixed port: two test workers would clash), no web UIs.
_OPTS = "-Dspark.master.rest.enabled=false -Dspark.ui.enabled=false"


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace")) if log.exists() else None
        if found:
            return found
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: exited {proc.returncode}:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"{log.name}: no {pattern!r} within {timeout} s:\n{log.read_text(errors='replace')[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process and everything it started (executors), SIGKILL what is left."""
    if proc.poll() is not None:
        return
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for p in family:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=20)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    _, left = psutil.wait_procs(alive, timeout=10)
    proc.wait()
    assert not left, f"still running after SIGKILL: {left}"


@contextmanager
def standalone(work: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[str]:
    """A master and ``workers`` workers of ``cores`` cores each; yields the master URL."""
    work.mkdir(parents=True, exist_ok=True)
    # the daemons only schedule a test's few tasks: the small-input JVM options (C1, serial GC) suit them
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_MASTER_OPTS": _OPTS, "SPARK_WORKER_OPTS": _OPTS,
           "SPARK_DAEMON_JAVA_OPTS": SMALL_INPUT_JVM, "SPARK_LOG_DIR": str(work),
           "SPARK_WORKER_DIR": str(work / "work")}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        log = work / "master.log"
        with open(log, "wb") as out:
            procs.append(subprocess.Popen([str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host",
                                           "127.0.0.1", "--port", "0", "--webui-port", "0"],
                                          stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        url = _wait_for(log, r"Starting Spark master at (spark://[\d.]+:\d+)", procs[0]).group(1)
        for i in range(workers):
            wlog = work / f"worker-{i}.log"
            with open(wlog, "wb") as out:
                procs.append(subprocess.Popen(
                    [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0",
                     "--webui-port", "0", "--cores", str(cores), "--memory", memory,
                     "--work-dir", str(work / f"work-{i}"), url],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        for i, proc in enumerate(procs[1:]):
            _wait_for(work / f"worker-{i}.log", r"Successfully registered with master", proc)
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)
