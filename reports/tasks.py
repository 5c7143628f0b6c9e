"""Run the report's independent Spark steps on a few threads, in dependency order.

Why: on a small run nearly all of the report's time is the driver's own work (py4j round
trips, Catalyst analysis and planning of each DataFrame, job scheduling, the JIT warming
up), done one step after another on one core while the other sits idle. Most steps do
not depend on each other (the interval tables all come straight from the events; the
metrics queries, the plot tables and the Parquet writes all read finished tables), and
PySpark lets several Python threads drive the same session at once: each gets its own
JVM thread, jobs from different threads run side by side. The steps themselves are
unchanged DataFrame -> DataFrame transforms, so results cannot depend on the schedule.

A graph is a list of named steps, each with the names of the steps whose results it
takes as arguments. Steps are submitted in the order given, which must list every step
after its dependencies: a worker that picks a step up then only waits on steps already
picked up by others, so a pool of any size cannot deadlock. With ``workers <= 1`` the
steps run in the caller's thread, one after another (what tests and debugging want).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

#: When a list, every step run appends ``(name, thread, start, end, waited)`` (perf_counter
#: seconds; ``waited``: time spent waiting for its dependencies): ``bench/report_profile.py``
#: draws the schedule from it.
TIMELINE: list[tuple[str, str, float, float, float]] | None = None


@dataclass(frozen=True)
class Step:
    """``fn(*results of deps)`` is the result of step ``name``."""

    name: str
    fn: Callable[..., Any]
    deps: tuple[str, ...] = ()


def step(name: str, fn: Callable[..., Any], *deps: str) -> Step:
    """Shorthand for :class:`Step`."""
    return Step(name, fn, tuple(deps))


def run_steps(steps: Sequence[Step], workers: int = 1) -> dict[str, Any]:
    """Run ``steps`` (see the module docstring); return ``name -> result``.

    The first failure (in submission order) is raised once every step has finished,
    so no thread is left running Spark jobs behind the caller's back."""
    seen: set[str] = set()
    for s in steps:
        missing = [d for d in s.deps if d not in seen]
        if missing or s.name in seen:
            raise ValueError(f"step {s.name!r}: listed twice or before its dependencies {missing}")
        seen.add(s.name)
    if workers <= 1:
        done: dict[str, Any] = {}
        for s in steps:
            done[s.name] = _timed(s.name, s.fn, [done[d] for d in s.deps], 0.0)
        return done
    futures: dict[str, Future[Any]] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="report") as pool:
        for s in steps:
            deps = [futures[d] for d in s.deps]
            futures[s.name] = pool.submit(_call, s.name, s.fn, deps)
    for f in futures.values():  # the pool has shut down: all are done
        f.result()
    return {name: f.result() for name, f in futures.items()}


def _call(name: str, fn: Callable[..., Any], deps: list[Future[Any]]) -> Any:
    t = time.perf_counter()
    args = [d.result() for d in deps]
    return _timed(name, fn, args, time.perf_counter() - t)


def _timed(name: str, fn: Callable[..., Any], args: list[Any], waited: float) -> Any:
    if TIMELINE is None:
        return fn(*args)
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        TIMELINE.append((name, threading.current_thread().name, t, time.perf_counter(), waited))
