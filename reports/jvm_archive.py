"""A class-data-sharing archive of the Spark driver's classes, made by the first session
and mapped by every later one.

Why: a report's JVM loads and verifies some 20,000 classes from Spark's jars, first at
start and then while Spark analyses and runs its first plans; that is seconds of a small
run's report, paid again by every ``rmqemu report``, ``launch --report`` and pytest
worker. Java (13 and later) can write the classes a JVM loaded into an archive when it
exits (``-XX:ArchiveClassesAtExit``) and map that archive at the next start
(``-XX:SharedArchiveFile``). Measured on the 2-core host (bench/README.md): the session
start 5.1-6.9 s -> 3.1-4.3 s, and the first metrics of a small run faster too.

The archive fits one Java and one Spark install (the class path is recorded in it), so its
name is a hash of both; a JVM that cannot use it runs without it. It is written once, by
the first short-lived session of an install (:func:`jvm_options`), to a temporary name that :func:`publish` renames when that
JVM has exited normally: a killed JVM leaves no half-written archive behind, and sessions
started meanwhile run without it.
The file is large (about 170 MB); ``RMQEMU_SPARK_ARCHIVE=0`` turns the whole thing off.
Its directory: ``$XDG_CACHE_HOME/rmqemu`` or ``~/.cache/rmqemu``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from pathlib import Path

#: The JVM's log lines about the archive (classes it skips, a mismatch) are not the user's
#: concern: a JVM without a usable archive just starts as it would have.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def cache_dir() -> Path:
    """Where archives live (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rmqemu"


def archive_path() -> Path | None:
    """The archive of this Java and Spark install, or None when turned off or the install
    cannot be identified (no ``java`` found)."""
    if os.environ.get("RMQEMU_SPARK_ARCHIVE", "1") == "0":
        return None
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    import pyspark

    java = os.path.realpath(java)
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    key = f"{java}|{os.stat(java).st_mtime_ns}|{jars}|{pyspark.__version__}"
    return cache_dir() / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


#: A recording older than this is taken for one whose JVM died without publishing.
STALE_RECORDING_S = 600.0

#: How long a recording JVM is given to exit (it writes the archive then): 11 s on the 2-core
#: host when quiet, and several times that while other JVMs compete for the cores. One killed
#: before it is done publishes nothing, and the next short-lived session records again.
RECORDING_EXIT_S = 300.0


def jvm_options(record: bool = False) -> tuple[str, Path | None]:
    """``(options for the driver JVM, archive it writes at exit or None)``: map the archive
    when there is one. Without one, and with ``record``, have this JVM write it at exit to
    a name of its own that :func:`publish` turns into the archive's name.

    Why only when asked, and one at a time: writing costs the recording JVM a slower start
    and about 10 s at exit. A short-lived session records (``rmqemu report``);
    long-lived ones (a pytest worker's) only map, or the archive would appear when the
    test suite ends. A marker file lets one session record while the others, started
    meanwhile, run without."""
    archive = archive_path()
    if archive is None:
        return "", None
    if archive.is_file() and archive.stat().st_size > 0:
        return f"-XX:SharedArchiveFile={archive} {QUIET}", None
    if not record or not _claim(_marker(archive)):
        return "", None
    for old in archive.parent.glob(archive.name + ".*.tmp"):  # of recordings that died
        _remove_if_older(old, STALE_RECORDING_S)
    pending = archive.with_name(f"{archive.name}.{os.getpid()}.{threading.get_native_id()}.tmp")
    return f"-XX:ArchiveClassesAtExit={pending} {QUIET}", pending


def _marker(archive: Path) -> Path:
    return archive.with_name(archive.name + ".recording")


def _remove_if_older(path: Path, seconds: float) -> None:
    try:
        if time.time() - path.stat().st_mtime > seconds:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def _claim(marker: Path) -> bool:
    """Create ``marker`` unless a fresh one exists (another session records)."""
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        _remove_if_older(marker, STALE_RECORDING_S)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError:  # recorded elsewhere, or a read-only cache: run without
        return False
    os.close(fd)
    return True


def publish(pending: Path | None, exited_normally: bool) -> None:
    """Give the archive a JVM wrote at exit its final name (or drop it, when the JVM did
    not exit normally and the file may be incomplete)."""
    if pending is None:
        return
    final = pending.with_name(pending.name[:pending.name.index(".jsa.") + len(".jsa")])
    try:
        _marker(final).unlink(missing_ok=True)
        if exited_normally and pending.is_file() and pending.stat().st_size > 0:
            os.replace(pending, final)
        else:
            pending.unlink(missing_ok=True)
    except OSError:  # another session's rename or a full disk: the next session tries again
        pass
