"""rmqemu's emulator: ``emulator.Cluster`` is the Python API of a run with its fault verbs
(:mod:`emulator.chaos`, docs/design.md §8).

The name is resolved on first use: every node process imports ``emulator.roles`` and friends,
and must not pay for the launcher, the fault layer and their imports it never uses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Cluster", "FaultHandle"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rmqemu.emulator import chaos

        return getattr(chaos, name)
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
