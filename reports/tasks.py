"""Run the report's independent Spark steps on a few threads, in dependency order.

Why: on a small run nearly all of the report's time is the driver's own work (py4j round
trips, Catalyst analysis and planning of each DataFrame, job scheduling, the JIT warming
up), done one step after another on one core while the other sits idle. Most steps do
not depend on each other (the interval tables all come straight from the events; the
metrics queries, the plot tables and the Parquet writes each read a few finished
tables), and PySpark lets several Python threads drive the same session at once: each
gets its own JVM thread, jobs from different threads run side by side. The steps
themselves are unchanged DataFrame -> DataFrame transforms, so results cannot depend on
the schedule.

A graph is a list of named steps, each with the names of the steps whose results it
takes as arguments; every step comes after its dependencies. A step is started as soon
as its dependencies are done and a thread is free; among ready steps, the one listed
first goes first (so the list order is the priority: put the long chains first). With
``workers <= 1`` the steps run in the caller's thread in list order (what tests and
debugging want).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

#: When a list, every step run appends ``(name, thread, start, end)`` (perf_counter
#: seconds): ``bench/report_profile.py --timeline`` prints the schedule from it.
TIMELINE: list[tuple[str, str, float, float]] | None = None


@dataclass(frozen=True)
class Step:
    """``fn(*results of deps)`` is the result of step ``name``."""

    name: str
    fn: Callable[..., Any]
    deps: tuple[str, ...] = ()


def step(name: str, fn: Callable[..., Any], *deps: str) -> Step:
    """Shorthand for :class:`Step`."""
    return Step(name, fn, tuple(deps))


def given(values: dict[str, Any]) -> list[Step]:
    """Steps that just return already computed ``values`` (to run a graph that needs
    tables an earlier graph built)."""
    return [Step(name, (lambda v=v: v)) for name, v in values.items()]


def downstream(steps: Sequence[Step], name: str) -> set[str]:
    """The names of the steps of ``steps`` that depend on step ``name``, directly or not."""
    found: set[str] = set()
    for s in steps:  # every step comes after its dependencies
        if any(d == name or d in found for d in s.deps):
            found.add(s.name)
    return found


def upstream(steps: Sequence[Step], names: Sequence[str]) -> list[Step]:
    """The steps of ``steps`` that ``names`` need: those steps and their dependencies,
    directly or not, in their order in ``steps`` (a graph pruned to what some results need:
    the metrics of a few sections do not build the route-staleness chain)."""
    by_name = {s.name: s for s in steps}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"no step named {missing}")
    needed: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(by_name[name].deps)
    return [s for s in steps if s.name in needed]


def run_steps(steps: Sequence[Step], workers: int = 1,
              per_thread: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run ``steps`` (see the module docstring); return ``name -> result``. ``per_thread``
    is called first in each worker thread (thread-local settings), not in the caller's.

    After a failure no further step is started; the steps already running are waited
    for (no thread is left running Spark jobs behind the caller's back), then the first
    failure is raised."""
    seen: set[str] = set()
    for s in steps:
        missing = [d for d in s.deps if d not in seen]
        if missing or s.name in seen:
            raise ValueError(f"step {s.name!r}: listed twice or before its dependencies {missing}")
        seen.add(s.name)
    done: dict[str, Any] = {}
    if workers <= 1:
        for s in steps:
            done[s.name] = _timed(s.name, s.fn, [done[d] for d in s.deps])
        return done
    pending = list(steps)
    running: dict[Future[Any], str] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="report", initializer=per_thread) as pool:
        while pending or running:
            if failure is None:
                for s in [s for s in pending if all(d in done for d in s.deps)][:workers - len(running)]:
                    pending.remove(s)
                    running[pool.submit(_timed, s.name, s.fn, [done[d] for d in s.deps])] = s.name
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                name = running.pop(f)
                if f.exception() is not None:
                    failure = failure or f.exception()
                else:
                    done[name] = f.result()
    if failure is not None:
        raise failure
    return done


def _timed(name: str, fn: Callable[..., Any], args: list[Any]) -> Any:
    if TIMELINE is None:
        return fn(*args)
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        TIMELINE.append((name, threading.current_thread().name, t, time.perf_counter()))
