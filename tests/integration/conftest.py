"""Every test under ``tests/integration`` starts real node processes (a cluster, or ``rmqemu
launch``/``up`` as a subprocess), so each gets the ``integration`` marker here rather than by
hand: a module added later cannot forget it, and ``pytest -m "not integration"`` stays the quick
loop (unit, fake-clock and Spark tests) without a list to keep up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the items collected from this directory. The hook sees the whole session's items
    (a conftest hook is not scoped to its directory), hence the path check."""
    for item in items:
        if Path(item.path).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.integration)
