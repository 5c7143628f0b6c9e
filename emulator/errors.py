"""The emulator's exception tree, in one place.

    RmqemuError                  base of everything the CLI turns into a clean message
    ├── TopologyError            a topology file is unreadable or invalid; ``problems`` lists
    │                            one "path: message" line per problem (CLI exit code 2)
    ├── RunDirError              a run directory is missing, incomplete or not this tool's
    ├── LaunchError              a node did not start or did not say ready in time
    ├── ClusterError             a running cluster misbehaved: ``died`` names nodes that exited
    │                            without a fault killing them (``rmqemu launch`` exits 1)
    └── ControlError             a control-plane command timed out or was refused

Fault injection has its own tree in ``faults/errors.py``; transport failures surface as
``ControlError`` (control plane) or as ``None`` replies to node logic (data plane).
"""

from __future__ import annotations


class RmqemuError(Exception):
    """Base class: an error with a message meant for a person."""


class TopologyError(RmqemuError):
    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s)\n{lines}")


class RunDirError(RmqemuError):
    pass


class LaunchError(RmqemuError):
    pass


class ClusterError(RmqemuError):
    def __init__(self, message: str, died: list[str] | None = None) -> None:
        self.died = died or []
        super().__init__(message)


class ControlError(RmqemuError):
    pass
