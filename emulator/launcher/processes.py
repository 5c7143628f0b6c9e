"""Spawning node processes so that none outlives its run, and signalling only our own.

Three layers keep a run from leaving processes behind: every node gets ``PR_SET_PDEATHSIG``
(SIGKILL when the process that spawned it dies, even by SIGKILL), every node exits when its
control connection to the launcher closes, and the launcher kills what is left on shutdown.
Nodes run in their own session so a Ctrl-C at the terminal reaches only the launcher, which then
stops them in order. Signals go through ``emulator.launcher.signals.SpawnedProcess`` (a pidfd taken at spawn
time plus pid/create_time checks), so a reused pid can never be hit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from rmqemu.emulator.launcher.signals import SpawnedProcess
from rmqemu.emulator.node.clock import host_ms
from rmqemu.emulator.node.parent import LAUNCHER_PID_ENV
from rmqemu.errors import FaultError


@dataclass
class NodeProcess:
    """One spawned node: its Popen and its identity (pid, create_time, pidfd) from emulator.launcher.signals."""

    name: str
    popen: subprocess.Popen
    ident: SpawnedProcess
    exit_seen: bool = False
    expected_exit: bool = False  # set when a fault or a shutdown made it exit
    log_path: Path | None = field(default=None, repr=False)
    killed_ms: float | None = None  # host ms as a SIGKILL was sent (docs/design.md §7)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def create_time(self) -> float:
        return self.ident.create_time

    def alive(self) -> bool:
        return self.popen.poll() is None

    def is_stopped(self) -> bool:
        """True while the process is stopped by SIGSTOP (state T)."""
        try:
            return psutil.Process(self.pid).status() == psutil.STATUS_STOPPED
        except psutil.NoSuchProcess:
            return False

    def send_signal(self, sig: int) -> None:
        """Signal through the pidfd after checking pid and create_time (emulator.launcher.signals).
        A SIGKILL cannot be caught: the node stops within moments of the send, before a peer can
        notice (a closed socket), which may be before the launcher reaps it."""
        before, sent_at = self.killed_ms, host_ms()
        if sig == signal.SIGKILL:
            self.killed_ms = sent_at
        try:
            self.ident.send(sig)
        except BaseException:
            self.killed_ms = before
            raise

    def exit_info(self) -> dict[str, int]:
        """``{"code": n}`` or ``{"signal": n}`` for a process that has exited."""
        rc = self.popen.poll()
        if rc is None:
            return {}
        return {"signal": -rc} if rc < 0 else {"code": rc}

    def close(self) -> None:
        self.ident.close()


def spawn_node(run_dir: Path, name: str, control_key: bytes | None = None) -> NodeProcess:
    """Start ``python -m rmqemu.emulator.node <run_dir> <name>`` (the argv names the node). Its control
    key, when given, is written as one hex line to the child's stdin pipe: readable by that
    process only, and in no file (emulator.transport._auth).

    Nothing runs in the child between fork and exec, so CPython takes vfork: a library's fork
    handlers never run there. gRPC's do run after a plain fork and can abort the child before its
    exec (grpc/grpc#43055), which a test or application using a RocketMQ 5 client in-process
    would otherwise hit. The node asks to die with its launcher itself, at start."""
    log_path = run_dir / "logs" / f"{name}.log"
    log = open(log_path, "ab")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        popen = subprocess.Popen(
            [sys.executable, "-m", "rmqemu.emulator.node", str(run_dir), name],
            stdin=subprocess.PIPE if control_key is not None else subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # no preexec_fn: CPython spawns with vfork, which runs no fork handler
            env={**env, LAUNCHER_PID_ENV: str(os.getpid())},  # the node dies with us (emulator/node/main.py)
        )
    finally:
        log.close()
    if popen.stdin is not None:
        try:
            popen.stdin.write(control_key.hex().encode() + b"\n")  # type: ignore[union-attr]
            popen.stdin.close()
        except OSError:
            pass  # it died at once: the launcher sees it exit during start-up
    return NodeProcess(name, popen, SpawnedProcess.capture(popen.pid, name), log_path=log_path)


def kill_all(procs: list[NodeProcess], timeout_s: float = 5.0) -> None:
    """SIGCONT (a stopped process cannot die of SIGTERM) then SIGKILL whatever is still alive."""
    for p in procs:
        if p.alive():
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    p.send_signal(sig)
                except (FaultError, OSError):
                    break
    for p in procs:
        try:
            p.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
