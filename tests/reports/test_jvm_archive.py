"""The class-data archive's bookkeeping (reports/jvm_archive.py), without a JVM: which option a
session gets, one writer at a time, and a partial archive never put in place. The suite's own
Spark sessions map the archive for real (tests/conftest.py sets the variable)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rmqemu.reports import jvm_archive
from rmqemu.reports.jvm_archive import ENV, archive_key, archive_options


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv(ENV, str(tmp_path / "cds"))
    return tmp_path / "cds"


def test_without_the_variable_nothing_changes(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV)
    assert archive_options("-XX:+UseSerialGC") == ("", None)
    assert not folder.exists()


def test_the_first_session_writes_the_archive_and_later_ones_map_it(folder: Path) -> None:
    option, finish = archive_options("-XX:+UseSerialGC")
    assert finish is not None and option.startswith("-XX:ArchiveClassesAtExit=")
    partial = Path(option.split()[0].split("=", 1)[1])
    assert partial.parent == folder and partial.name.endswith(".partial")
    assert archive_options("-XX:+UseSerialGC") == ("", None)  # another session meanwhile: plain
    partial.write_bytes(b"archive")  # what the JVM writes as it exits
    finish(0)
    [archive] = list(folder.glob("*.jsa"))
    assert archive.read_bytes() == b"archive" and not partial.exists() and not list(folder.glob("*.lock"))
    assert archive_options("-XX:+UseSerialGC") == (f"-XX:SharedArchiveFile={archive}", None)
    other, finish_other = archive_options("")  # other options: an archive of their own
    assert other.startswith("-XX:ArchiveClassesAtExit=") and finish_other is not None
    finish_other(None)


@pytest.mark.parametrize("code", [None, 1, 137])
def test_an_archive_from_a_jvm_that_did_not_exit_normally_is_dropped(folder: Path, code: int | None) -> None:
    option, finish = archive_options("")
    assert finish is not None
    partial = Path(option.split()[0].split("=", 1)[1])
    partial.write_bytes(b"half an archi")
    finish(code)
    assert list(folder.iterdir()) == []  # no archive, no partial, no lock: the next session writes it
    assert archive_options("")[0].startswith("-XX:ArchiveClassesAtExit=")


def test_a_lock_whose_writer_is_gone_is_taken_over(folder: Path) -> None:
    _, finish = archive_options("")
    assert finish is not None
    [lock] = list(folder.glob("*.lock"))
    assert lock.read_text() == str(os.getpid()) and archive_options("") == ("", None)  # its writer lives
    old = time.time() - jvm_archive.STALE_LOCK_S - 1
    os.utime(lock, (old, old))  # held too long
    assert archive_options("")[0].startswith("-XX:ArchiveClassesAtExit=")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(dead.stdout.strip())  # a writer that has exited, its partial archive left behind
    left = folder / f"spark-{archive_key('')}.{dead.stdout.strip()}.partial"
    left.write_bytes(b"half")
    assert archive_options("")[0].startswith("-XX:ArchiveClassesAtExit=") and not left.exists()


def test_the_key_changes_with_java_and_options(folder: Path, tmp_path: Path) -> None:
    key = archive_key("")
    assert key is not None and key != archive_key("-XX:+UseSerialGC")
    java = tmp_path / "jdk" / "bin" / "java"
    java.write_text("#!/bin/sh\n# another build\n")
    assert archive_key("") != key
