"""reports.tasks: steps run in dependency order on a pool, failures surface, order is checked."""
from __future__ import annotations

import threading
import time

import pytest

from reports.tasks import downstream, run_steps, step


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_results_follow_dependencies(workers):
    def slow(v):
        time.sleep(0.01)
        return v

    steps = [step("a", lambda: slow(1)), step("b", lambda: slow(2)),
             step("c", lambda a, b: a + b, "a", "b"), step("d", lambda c, a: c * 10 + a, "c", "a"),
             step("e", lambda: 5)]
    assert run_steps(steps, workers) == {"a": 1, "b": 2, "c": 3, "d": 31, "e": 5}


def test_a_chain_longer_than_the_pool_does_not_deadlock():
    steps = [step("s0", lambda: 0)] + [step(f"s{i}", lambda p: p + 1, f"s{i - 1}") for i in range(1, 12)]
    assert run_steps(steps, 2)["s11"] == 11


def test_one_worker_runs_in_the_callers_thread():
    me = threading.get_ident()
    assert run_steps([step("t", threading.get_ident)], 1)["t"] == me


def test_failure_stops_new_steps_and_waits_for_running_ones():
    finished, started_late = [], []

    def slow():
        time.sleep(0.2)
        finished.append("slow")

    def boom():
        time.sleep(0.05)
        raise RuntimeError("no such table")

    steps = [step("slow", slow), step("bad", boom), step("after", lambda b: b, "bad"),
             step("late", lambda s: started_late.append(1), "slow")]
    with pytest.raises(RuntimeError, match="no such table"):
        run_steps(steps, 2)
    assert finished == ["slow"] and started_late == []


def test_ready_steps_start_in_list_order():
    """Three ready steps, two workers: the first two listed start, the third waits."""
    times = {}

    def timed(name):
        def run():
            start = time.perf_counter()
            time.sleep(0.05)
            times[name] = (start, time.perf_counter())
        return run

    run_steps([step(n, timed(n)) for n in ("x", "y", "z")], 2)
    assert times["z"][0] >= min(times["x"][1], times["y"][1])


def test_steps_must_come_after_their_dependencies():
    with pytest.raises(ValueError, match="before its dependencies"):
        run_steps([step("b", lambda a: a, "a"), step("a", lambda: 1)], 2)
    with pytest.raises(ValueError, match="twice"):
        run_steps([step("a", lambda: 1), step("a", lambda: 2)], 1)


def test_downstream_names_every_step_that_waits_for_one():
    steps = [step("a", lambda: 1), step("b", lambda: 2), step("c", lambda a: a, "a"),
             step("d", lambda c, b: c + b, "c", "b"), step("e", lambda b: b, "b")]
    assert downstream(steps, "a") == {"c", "d"}
    assert downstream(steps, "b") == {"d", "e"}
    assert downstream(steps, "d") == set()


def test_per_thread_runs_in_every_worker_before_its_steps():
    marked = threading.local()
    workers = set()

    def mark():
        marked.on = True
        workers.add(threading.get_ident())

    steps = [step(f"s{i}", lambda: (time.sleep(0.01), getattr(marked, "on", False))[1]) for i in range(6)]
    done = run_steps(steps, 3, per_thread=mark)
    assert all(done.values()) and 1 <= len(workers) <= 3
    assert not getattr(marked, "on", False)  # not in the caller's thread
