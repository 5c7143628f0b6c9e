"""The C++ client's install without a server: its library loadable from the installed venv; a
failed pip install says which command failed and what pip printed, and leaves nothing half-made
behind (reuse and the cache's place: test_cache.py)."""

from __future__ import annotations

import json
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

