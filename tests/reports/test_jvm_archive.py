"""The Spark driver's class archive (reports.jvm_archive): recorded once by a short-lived
session, published only when its JVM exited normally, mapped by every later session."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reports import jvm_archive

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RMQEMU_SPARK_ARCHIVE", raising=False)
    return tmp_path / "cache" / "rmqemu"


def _record(pending: Path | None) -> Path:
    """What the JVM does at exit: write the archive to the pending name."""
    assert pending is not None
    pending.write_bytes(b"archive")
    return pending


def test_only_a_recording_session_records_and_one_at_a_time(cache: Path) -> None:
    assert jvm_archive.jvm_options(record=False) == ("", None)
    options, pending = jvm_archive.jvm_options(record=True)
    assert pending is not None and f"-XX:ArchiveClassesAtExit={pending}" in options
    assert pending.parent == cache
    assert jvm_archive.jvm_options(record=True) == ("", None)  # the first one records


def test_a_normal_exit_publishes_and_later_sessions_map_it(cache: Path) -> None:
    _, pending = jvm_archive.jvm_options(record=True)
    jvm_archive.publish(_record(pending), exited_normally=True)
    archive = jvm_archive.archive_path()
    assert archive is not None and archive.read_bytes() == b"archive"
    assert [p.name for p in cache.iterdir()] == [archive.name]  # no marker, no temporary
    for record in (False, True):
        options, again = jvm_archive.jvm_options(record=record)
        assert again is None and f"-XX:SharedArchiveFile={archive}" in options


def test_a_killed_jvm_publishes_nothing_and_frees_the_next_recording(cache: Path) -> None:
    _, pending = jvm_archive.jvm_options(record=True)
    jvm_archive.publish(_record(pending), exited_normally=False)
    assert list(cache.iterdir()) == []
    assert jvm_archive.jvm_options(record=True)[1] is not None


def test_a_recording_that_died_is_taken_over_after_a_while(cache: Path) -> None:
    _, pending = jvm_archive.jvm_options(record=True)
    _record(pending)  # then the process died: neither published nor dropped
    long_ago = time.time() - jvm_archive.STALE_RECORDING_S - 1
    for leftover in cache.iterdir():
        os.utime(leftover, (long_ago, long_ago))
    _, second = jvm_archive.jvm_options(record=True)
    assert second is not None  # recording again
    assert not pending.exists()  # the dead one's temporary is gone (same name: same pid here)


def test_turned_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQEMU_SPARK_ARCHIVE", "0")
    assert jvm_archive.jvm_options(record=True) == ("", None)
    assert not cache.exists()


SESSION = """
import sys
from reports.session import build_session, stop_session
spark = build_session(small_input=True, record_archive=sys.argv[1] == "record")
args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
assert spark.range(5).count() == 5
stop_session(spark)
print([a for a in args if "Archive" in a])
"""


def test_real_jvms_record_then_map(cache: Path) -> None:
    """Two real driver JVMs: the first writes the archive at exit, the second maps it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def session(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", SESSION, mode], env=env, capture_output=True,
                              text=True, timeout=600)  # a recording JVM may take minutes to exit on a loaded host
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    assert "ArchiveClassesAtExit" in session("record")
    archive = jvm_archive.archive_path()
    assert archive is not None and archive.stat().st_size > 1_000_000
    assert [p.name for p in cache.iterdir()] == [archive.name]
    assert f"-XX:SharedArchiveFile={archive}" in session("map")
