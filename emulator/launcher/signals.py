"""Signal safety: a signal only ever reaches a process this run spawned.

A pid alone is not an identity: once a node exits and is reaped, the kernel may hand its pid to
any other process on the host, and a late ``kill -9 <pid>`` would hit a stranger. So each node is
recorded at spawn time as a :class:`SpawnedProcess`:

- a **pidfd** (``os.pidfd_open``), taken right after ``Popen`` returns — the child cannot have
  been reaped yet (only its parent, the launcher, reaps it), so the pidfd is certainly this child.
  ``signal.pidfd_send_signal`` through it can never reach another process: if the child has died
  the call fails with ESRCH even when its pid has been reused;
- its **pid and create_time** (psutil), which go into ``manifest.json`` so another process (the
  CLI of an interactive verb) can check them, and which are checked again before every signal.

Every send first verifies the process (exists, same create_time, not a zombie) and refuses with
:class:`UnsafeSignal` / :class:`ProcessGone` otherwise. Nothing here looks processes up by name.
"""

from __future__ import annotations

import os
import signal as _signal
import subprocess
from dataclasses import dataclass, field
from typing import Any, Sequence

import psutil

from rmqemu.errors import ProcessGone, UnsafeSignal

# psutil derives create_time from boot time + start ticks, identically on every call; the tolerance
# only absorbs float formatting through JSON (a clock tick is 10 ms, pid reuse that fast is absurd).
CREATE_TIME_TOLERANCE_S = 1e-3


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise ProcessGone(f"process {pid} does not exist") from None
    except (AttributeError, OSError):  # no pidfd on this kernel/platform: pid + create_time only
        return None


@dataclass
class SpawnedProcess:
    """Identity of one spawned node process: pid, create_time and (where available) a pidfd."""

    pid: int
    create_time: float
    name: str = ""
    pidfd: int | None = field(default=None, repr=False)

    @classmethod
    def capture(cls, pid: int, name: str = "") -> "SpawnedProcess":
        """Record a child right after spawning it, before anything could reap it."""
        pidfd = _open_pidfd(pid)
        try:
            create_time = psutil.Process(pid).create_time()
        except psutil.NoSuchProcess:
            if pidfd is not None:
                os.close(pidfd)
            raise ProcessGone(f"process {pid} ({name or 'unnamed'}) exited before it was recorded") from None
        return cls(pid, create_time, name, pidfd)

    @classmethod
    def spawn(cls, argv: Sequence[str], name: str = "",
              **popen_kwargs: Any) -> tuple[subprocess.Popen, "SpawnedProcess"]:
        """``Popen(argv)`` and capture it at once; the caller owns (and must reap) the Popen."""
        proc = subprocess.Popen(list(argv), **popen_kwargs)
        return proc, cls.capture(proc.pid, name)

    @classmethod
    def from_manifest(cls, name: str, pid: int, create_time: float) -> "SpawnedProcess":
        """Re-attach to a process recorded in a manifest (for instance from another CLI process).

        The pidfd is opened first and the create_time checked after: if the check passes, the
        pidfd refers to the recorded process, whatever happens to the pid afterwards.
        """
        proc = cls(pid, float(create_time), name, _open_pidfd(pid))
        try:
            proc.verify()
        except UnsafeSignal:
            proc.close()
            raise
        return proc

    def manifest_entry(self) -> dict[str, Any]:
        return {"pid": self.pid, "create_time": self.create_time}

    def _label(self) -> str:
        return f"{self.name or 'process'} (pid {self.pid})"

    def verify(self) -> None:
        """Raise unless the pid still belongs to the recorded, living process."""
        try:
            proc = psutil.Process(self.pid)
            create_time, status = proc.create_time(), proc.status()
        except psutil.NoSuchProcess:
            raise ProcessGone(f"{self._label()} has exited") from None
        if abs(create_time - self.create_time) > CREATE_TIME_TOLERANCE_S:
            raise UnsafeSignal(
                f"refusing to signal {self._label()}: the pid now belongs to a process created at "
                f"{create_time:.3f}, not the recorded {self.create_time:.3f} (pid reused)")
        if status == psutil.STATUS_ZOMBIE:
            raise ProcessGone(f"{self._label()} has exited (zombie, not yet reaped)")

    def status(self) -> str:
        """psutil status of the verified process (``running``, ``sleeping``, ``stopped``, ...)."""
        self.verify()
        try:
            return psutil.Process(self.pid).status()
        except psutil.NoSuchProcess:
            raise ProcessGone(f"{self._label()} has exited") from None

    def send(self, sig: int) -> None:
        """Verify, then signal through the pidfd (or the pid when there is no pidfd)."""
        self.verify()
        try:
            if self.pidfd is not None:
                _signal.pidfd_send_signal(self.pidfd, sig)
            else:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            raise ProcessGone(f"{self._label()} has exited") from None

    def close(self) -> None:
        """Release the pidfd (idempotent)."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class ProcessRegistry:
    """The processes of one run, by node name: the only way the launcher should signal a node."""

    def __init__(self) -> None:
        self._procs: dict[str, SpawnedProcess] = {}

    def add(self, proc: SpawnedProcess) -> None:
        old = self._procs.pop(proc.name, None)
        if old is not None:  # a restarted node replaces its previous incarnation
            old.close()
        self._procs[proc.name] = proc

    def get(self, name: str) -> SpawnedProcess:
        try:
            return self._procs[name]
        except KeyError:
            known = ", ".join(sorted(self._procs)) or "none"
            raise UnsafeSignal(f"refusing to signal {name!r}: not a process this run spawned "
                               f"(spawned: {known})") from None

    def send(self, name: str, sig: int) -> None:
        self.get(name).send(sig)

    def names(self) -> list[str]:
        return sorted(self._procs)

    def close_all(self) -> None:
        for proc in self._procs.values():
            proc.close()
        self._procs.clear()
