"""Every exception rmqemu raises on purpose, in one tree, documented here and nowhere else.

Catch :class:`RmqemuError` to handle them all; the CLI turns each into a clear message and an
exit code (2 for bad input, 1 for anything a run or a cluster refused)::

    RmqemuError                  base: an error with a message meant for a person
    ├── TopologyError            a topology file is unreadable or invalid; ``problems`` lists
    │                            one "path: message" line per problem (exit 2)
    ├── UsageError               a command's arguments or options are invalid (exit 2)
    ├── RunDirError              a run directory is missing, incomplete or not this tool's (exit 2)
    ├── RunInputError            a run cannot be analysed: the message names the file at fault (exit 2)
    ├── ExpectationError         an ``expect:`` rule is malformed or names a path metrics.json does not
    │                            have (exit 2; a rule that a value breaks is a failed verdict, exit 1)
    ├── LaunchError              a node did not start or did not say ready in time
    ├── ClusterError             a running cluster misbehaved: ``died`` names nodes that exited
    │                            without a fault killing them (``rmqemu launch`` exits 1)
    ├── ControlError             a control-plane command timed out or was refused
    │   ├── ControlTimeout       a node did not acknowledge a command in time (``node``,
    │   │                        ``command``, ``timeout_ms``)
    │   └── HostOverloaded       nodes missed a command's deadline because the host cannot keep
    │                            up: their own timers were that far behind (docs/design.md §9,
    │                            "Overload"; ``rmqemu launch`` exits 3 with it, like any ControlError)
    └── FaultError               anything the fault injector refuses or fails to do
        ├── TargetError          a target expression names no known node / role / selector, or
        │                        selects nothing (the message lists what is known)
        ├── PartitionError       a partition cannot be built from the nodes given (too few nodes,
        │                        overlapping or empty groups, unknown mode)
        ├── SpecError            the arguments of an interactive verb do not make a valid fault
        │                        (one line per problem, named by its option: ``--delay: ...``; exit 2)
        ├── OverlappingFault     a fault would take a node that another active fault holds
        │                        (the message names the holder: its id, kind and targets)
        ├── UnsafeSignal         a signal was refused because the process may not be the one this
        │   │                    run spawned (pid unknown, create_time differs: pid reuse)
        │   └── ProcessGone      the spawned process has exited (zombie or reaped): nothing to signal
        └── PlanError            a fault plan is malformed, or a fault schedule cannot run
            └── PlanFailed       a step failed while a plan ran; carries ``seed`` and ``step`` so the
                                 run can be replayed (``rmqemu launch --replay RUN_DIR``)

``TargetError``, ``PartitionError`` and ``SpecError`` are also ``ValueError``\\ s: they come from
pure functions fed by user input, so a pydantic validator can turn them into a message directly.
Transport failures on the data plane are not exceptions: node logic sees a ``None`` reply.

This module imports nothing from the project: every layer (roles, node, launcher, faults,
reports, CLI) may raise from it.
"""

from __future__ import annotations

from typing import Any


class RmqemuError(Exception):
    """Base class: an error with a message meant for a person."""


class TopologyError(RmqemuError):
    """A topology file is unreadable or invalid; one "path: message" line per problem."""

    #: A hostile file must not turn into megabytes of messages: each line and their number are capped.
    MAX_LINE = 300
    MAX_SHOWN = 50

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = [p if len(p) <= self.MAX_LINE else f"{p[:self.MAX_LINE - 30]}... ({len(p)} chars)"
                         for p in problems]
        shown = self.problems[:self.MAX_SHOWN]
        more = len(self.problems) - len(shown)
        lines = "\n".join(f"  {p}" for p in shown) + (f"\n  ... and {more} more" if more else "")
        super().__init__(f"{source}: {len(problems)} problem(s)\n{lines}")


class UsageError(RmqemuError):
    """A command's arguments or options are invalid (``--nemesis``, ``--interval``, ...)."""


class RunDirError(RmqemuError):
    """A run directory is missing, incomplete or not this tool's."""


class RunInputError(RmqemuError):
    """The run directory cannot be analysed; the message names the file at fault."""


class ExpectationError(RmqemuError, ValueError):
    """An ``expect:`` rule is malformed or names a metric path that does not exist (rmqemu.verdicts)."""


class LaunchError(RmqemuError):
    """A node did not start or did not say ready in time."""


class ClusterError(RmqemuError):
    """A running cluster misbehaved; ``died`` names the nodes that exited unexpectedly."""

    def __init__(self, message: str, died: list[str] | None = None) -> None:
        self.died = died or []
        super().__init__(message)


class ControlError(RmqemuError):
    """A control-plane command timed out or was refused."""


class ControlTimeout(ControlError):
    """A node did not acknowledge a control command within ``timeout_ms``."""

    def __init__(self, node: str, command: str, timeout_ms: float) -> None:
        self.node, self.command, self.timeout_ms = node, command, timeout_ms
        super().__init__(f"{node}: no ack to {command!r} within {timeout_ms:.0f} ms")


class HostOverloaded(ControlError):
    """Nodes missed a control command's deadline and their own timers were far enough behind to
    explain it: the host cannot keep up with the cluster at its scale. ``nodes``: node -> how late
    its timers ran (wall ms)."""

    def __init__(self, message: str, nodes: dict[str, float]) -> None:
        self.nodes = nodes
        super().__init__(message)


class FaultError(RmqemuError):
    """Base of every error the fault injector raises on purpose."""


class TargetError(FaultError, ValueError):
    """A target expression cannot be resolved against the run's node table."""


class PartitionError(FaultError, ValueError):
    """A partition cannot be computed from the given nodes."""


class SpecError(FaultError, ValueError):
    """Arguments of an interactive verb that do not make a valid fault entry."""


class OverlappingFault(FaultError):
    """A new fault would take a node that an active fault already holds."""


class UnsafeSignal(FaultError):
    """A signal was refused: the target may not be a process this run spawned."""


class ProcessGone(UnsafeSignal):
    """The spawned process has already exited: there is nothing safe to signal."""


class PlanError(FaultError):
    """A plan is malformed or inconsistent (for instance two steps that overlap)."""


class PlanFailed(PlanError):
    """A step failed while running a plan; the seed lets the run be replayed."""

    def __init__(self, message: str, *, seed: Any = None, step: dict[str, Any] | None = None):
        super().__init__(message)
        self.seed = seed
        self.step = step
