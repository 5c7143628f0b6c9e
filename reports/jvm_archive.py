"""A class-data archive of the local report JVM's classes, kept between sessions (opt-in).

A local Spark driver spends most of its start loading and verifying the classes of Spark's jars:
13 CPU s of a 12 s start on the 2-core reference host. With ``RMQEMU_SPARK_CDS`` naming a
directory, the first local session to stop leaves there an archive of the classes its JVM loaded
(the JVM's own AppCDS, ``-XX:ArchiveClassesAtExit``: that once, its exit takes seconds longer),
and every later local session maps it (``-XX:SharedArchiveFile``) and starts in about half the
time (bench/README.md has the figures). It is opt-in because of that one slow exit; the test
suite sets it (tests/conftest.py), since it starts a JVM in about twenty processes.

One archive per Java, Spark install and JVM options (the file's name is their digest). The JVM
crashes on a truncated archive, so one is written under a temporary name and renamed into place
only after its JVM exited normally; one session at a time writes it (a lock file, taken over when
its writer has exited, or after :data:`STALE_LOCK_S`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

ENV = "RMQEMU_SPARK_CDS"
STALE_LOCK_S = 600.0
#: How long a JVM writing the archive may take to exit (the write is seconds of CPU on a small host).
WRITE_TIMEOUT_S = 180.0


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found is not None and found.exists() else None


def archive_key(jvm_options: str) -> str | None:
    """The digest naming the archive of this Java, this Spark install and these options; None
    without a ``java`` to describe."""
    import pyspark

    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    stat = java.stat()
    parts = [str(java), str(stat.st_size), str(stat.st_mtime_ns), pyspark.__version__, str(jars), jvm_options,
             *sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _writer_gone(lock: Path) -> bool:
    """The lock's writer (the process whose pid it holds) has exited, or held it too long."""
    try:
        if time.time() - lock.stat().st_mtime >= STALE_LOCK_S:
            return True
        os.kill(int(lock.read_text() or "0"), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):  # gone meanwhile, not ours to signal, or being written: wait
        return False
    return False


def _take_lock(lock: Path) -> bool:
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if not _writer_gone(lock):
                return False
            lock.unlink(missing_ok=True)  # take it over
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True
    return False


def archive_options(jvm_options: str) -> tuple[str, Callable[[int | None], None] | None]:
    """JVM options for a local driver started with ``jvm_options``, and what to call with its exit
    code once it has exited (None when nothing is to be done then):
    - ``RMQEMU_SPARK_CDS`` unset, or no ``java`` found: no option;
    - the archive exists: map it;
    - else, when no other session is writing it: write it at exit, under a temporary name that
      the call renames into place if the JVM exited normally (code 0)."""
    where = os.environ.get(ENV)
    key = archive_key(jvm_options) if where else None
    if not where or key is None:
        return "", None
    folder = Path(where)
    archive = folder / f"spark-{key}.jsa"
    if archive.is_file():
        return f"-XX:SharedArchiveFile={archive}", None
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / f"spark-{key}.lock"
    if not _take_lock(lock):
        return "", None
    for left in folder.glob(f"spark-{key}.*.partial"):  # a writer's that died: only the lock's holder writes
        left.unlink(missing_ok=True)
    partial = folder / f"spark-{key}.{os.getpid()}.partial"

    def finish(code: int | None) -> None:
        try:
            if code == 0 and partial.is_file() and partial.stat().st_size > 0:
                os.replace(partial, archive)
        finally:
            partial.unlink(missing_ok=True)
            lock.unlink(missing_ok=True)

    # -Xlog: the JVM would say, a line per class, which ones it leaves out (signed jars')
    return f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off,cds+dynamic=off", finish
