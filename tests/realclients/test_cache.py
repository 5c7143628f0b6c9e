"""What both real clients' installs share (tests/realclients/cache.py): a finished install outside
the repository, reused without the installer or the lock, and where the cache lives."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.realclients import alions, cache, py5client, pyclient

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
#: client -> (its install directory, installing it on first use; its cache's variable and leaf)
CLIENTS: dict[str, tuple[Callable[[], Path], str, str]] = {
    "ali-ons": (alions.ali_ons_dir, "RMQEMU_NPM_CACHE", "npm"),
    "cpp": (lambda: pyclient.python().parents[1], "RMQEMU_PYCLIENT_CACHE", "pyclient"),
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_finished_install_is_reused_without_the_installer_or_the_lock(client: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    install = CLIENTS[client][0]
    target = install()
    assert not target.is_relative_to(REPO), "the install must live outside the repository"
    stamp = (target / cache.MARKER).stat().st_mtime_ns

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("a complete install must be reused without running its installer or taking the lock")

    monkeypatch.setattr(cache.subprocess, "run", boom)
    monkeypatch.setattr(cache, "locked", boom)
    started = time.monotonic()
    assert install() == target
    assert time.monotonic() - started < 1.0
    assert (target / cache.MARKER).stat().st_mtime_ns == stamp


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_cache_root_precedence(client: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, var, leaf = CLIENTS[client]
    root = {"ali-ons": alions.cache_root, "cpp": pyclient.cache_root}[client]
    monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert root() == Path.home() / ".cache" / "rmqemu" / leaf
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert root() == tmp_path / "xdg" / "rmqemu" / leaf
    monkeypatch.setenv(var, str(tmp_path / "own"))
    assert root() == tmp_path / "own"


@pytest.mark.parametrize("harness", [pyclient, py5client], ids=["cpp", "py5"])
def test_a_failed_pip_install_names_the_command_and_pips_stderr(harness: Any, monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """pip pointed at a closed loopback port as its only index, no config file, no find-links:
    both Python clients' installs fail naming the command and pip's words, and leave nothing."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    root = tmp_path / "cache"
    with pytest.raises(cache.RealClientSetupError) as err:
        harness.python(root)
    text = str(err.value)
    assert text.startswith("pip install failed") and "install --no-input" in text, text
    assert f"{harness.PACKAGE}=={harness.VERSION}" in text and "No matching distribution" in text, text
    assert not harness.is_complete(harness.install_dir(root))
    assert not [p.name for p in root.iterdir() if p.name.startswith(".")], "temporary directories left"
