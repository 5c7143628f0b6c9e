"""A node dies with the process that launched it, even when that one is SIGKILLed.

The launcher spawns nodes with nothing run between fork and exec (emulator/launcher/processes.py:
CPython then uses vfork, and no library's fork handler runs in the child), so the node sets its
parent-death signal itself, first thing: ``PR_SET_PDEATHSIG`` with SIGKILL. A launcher that died
before that (the node's parent is then someone else) makes the node exit at once.
"""

from __future__ import annotations

import ctypes
import os
import signal

LAUNCHER_PID_ENV = "RMQEMU_LAUNCHER_PID"  # set by the launcher in each node's environment
_PR_SET_PDEATHSIG = 1


def die_with_launcher() -> bool:
    """Arm SIGKILL on the launcher's death; False when the launcher is already gone (the node must
    exit). A process started by hand (no ``RMQEMU_LAUNCHER_PID``) arms nothing."""
    expected = os.environ.get(LAUNCHER_PID_ENV)
    if not expected:
        return True
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        return True  # no prctl here: the launcher's shutdown still stops its nodes
    return str(os.getppid()) == expected
