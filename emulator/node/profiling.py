"""Opt-in profiling of a node process, for finding what a node spends its CPU on.

Set ``RMQEMU_PROFILE_DIR`` in the launcher's environment (nodes inherit it) and every node runs
its loop under :mod:`cProfile` and writes ``<dir>/<node>.prof`` when it exits, for
``bench/node_profile.py`` (or ``python -m pstats``) to read, and ``<dir>/<node>.cpu.json``, the CPU
seconds of each of the process's threads (the loop's, and libzmq's I/O thread). The profile counts
the loop thread's CPU time, not wall time: a node spends most of its wall time waiting in ``poll``,
and on a loaded host every call's wall time includes the time the process was not scheduled.
Off by default: cProfile roughly
doubles the cost of every Python call, which a capacity measurement must not pay.
"""

from __future__ import annotations

import cProfile
import json
import os
import time
from pathlib import Path
from typing import Callable

PROFILE_DIR_ENV = "RMQEMU_PROFILE_DIR"


def run_profiled(name: str, loop: Callable[[], int]) -> int:
    """``loop()``, under cProfile when ``RMQEMU_PROFILE_DIR`` is set; its exit code either way."""
    out_dir = os.environ.get(PROFILE_DIR_ENV)
    if not out_dir:
        return loop()
    profiler = cProfile.Profile(time.thread_time)
    try:
        return profiler.runcall(loop)
    finally:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(str(out / f"{name}.prof"))
        (out / f"{name}.cpu.json").write_text(json.dumps(_thread_cpu()), encoding="utf-8")


def _thread_cpu() -> dict[str, dict[str, float]]:
    """CPU seconds per thread of this process, from /proc (Linux): ``{tid: {user, system}}``."""
    import psutil  # a core dependency; imported here so a node that does not profile never loads it

    return {str(t.id): {"user": t.user_time, "system": t.system_time} for t in psutil.Process().threads()}
