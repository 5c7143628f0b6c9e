"""Fixtures for the real-client tests: the client programs a test starts are stopped at teardown."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.realclients.drivers import NodeProcs


@pytest.fixture
def node_procs(tmp_path: Path) -> Iterator[NodeProcs]:
    """Start produce.js/consume.js and the C++ client's programs through this; each is stopped (stdin
    closed, SIGTERM, SIGKILL to its group) at teardown, pass or fail. Their output stays in
    ``tmp_path/realclients``."""
    procs = NodeProcs(tmp_path / "realclients")
    try:
        yield procs
    finally:
        procs.stop_all()
