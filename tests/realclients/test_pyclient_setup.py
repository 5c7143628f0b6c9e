"""The C++ client's install without a server: its library loadable from the installed venv; a
failed pip install says which command failed and what pip printed, and leaves nothing half-made
behind (reuse and the cache's place: test_cache.py)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.realclients import cache, pyclient

pytestmark = pytest.mark.integration


def test_the_installed_client_loads_its_library() -> None:
    python = pyclient.python()
    target = python.parents[1]
    marker = cache.read_marker(target)
    assert (marker["package"], marker["version"], marker["library"]) == (pyclient.PACKAGE, pyclient.VERSION,
                                                                          "librocketmq.so")
    loaded = json.loads(subprocess.run([str(python), "-c", pyclient.PROBE], capture_output=True, text=True,
                                       timeout=60, check=True, cwd=target).stdout)
    assert {"Producer", "PushConsumer", "RecvMessage"} <= set(loaded["exports"])
    assert Path(loaded["library"]).is_relative_to(target)


def test_a_failed_pip_install_names_the_command_and_pips_stderr(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """pip pointed at a closed loopback port as its only index, no config file, no find-links."""
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
        pyclient.python(root)
    text = str(err.value)
    assert text.startswith("pip install failed") and "install --no-input" in text, text
    assert f"{pyclient.PACKAGE}=={pyclient.VERSION}" in text and "No matching distribution" in text, text
    assert not pyclient.is_complete(pyclient.install_dir(root))
    assert not [p.name for p in root.iterdir() if p.name.startswith(".")], "temporary directories left"
