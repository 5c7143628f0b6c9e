"""The exceptions of the fault injector, in one tree so callers can catch what they can handle.

::

    FaultError                 base: anything the fault injector refuses or fails to do
    ├── TargetError            a target expression names no known node / role / selector, or
    │                          selects nothing (the message lists what is known)
    ├── PartitionError         a partition cannot be built from the nodes given (too few nodes,
    │                          overlapping or empty groups, unknown mode)
    ├── SpecError              the arguments of an interactive verb do not make a valid fault
    │                          (one line per problem, named by its option: ``--delay: ...``)
    ├── OverlappingFault       a fault would take a node that another active fault holds
    │                          (the message names the holder: its id, kind and targets)
    ├── UnsafeSignal           a signal was refused because the process may not be the one this
    │   │                      run spawned (pid unknown, create_time differs: pid reuse)
    │   └── ProcessGone        the spawned process has exited (zombie or reaped): nothing to signal
    └── PlanError              a fault plan is malformed, or a fault schedule cannot run
        └── PlanFailed         a step failed while a plan ran; carries ``seed`` and ``step`` so the
                               run can be replayed (``rmqemu launch --replay RUN_DIR``)

``TargetError``, ``PartitionError`` and ``SpecError`` are also ``ValueError``\\ s: they come from pure functions
fed by user input, and a pydantic validator or a CLI can turn them into a message directly.
"""

from __future__ import annotations

from typing import Any


class FaultError(Exception):
    """Base of every error the fault injector raises on purpose."""


class TargetError(FaultError, ValueError):
    """A target expression cannot be resolved against the run's node table."""


class PartitionError(FaultError, ValueError):
    """A partition cannot be computed from the given nodes."""


class SpecError(FaultError, ValueError):
    """Arguments of an interactive verb that do not make a valid :class:`faults.spec.FaultSpec`."""


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
