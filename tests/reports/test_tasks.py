"""reports.tasks: steps run in dependency order on a pool, failures surface, order is checked."""
from __future__ import annotations

import threading
import time

import pytest

from reports.tasks import run_steps, step


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


def test_first_failure_is_raised_after_all_steps_ran():
    ran = []

    def boom():
        raise RuntimeError("no such table")

    steps = [step("bad", boom), step("after", lambda b: b, "bad"), step("other", lambda: ran.append(1))]
    with pytest.raises(RuntimeError, match="no such table"):
        run_steps(steps, 3)
    assert ran == [1]


def test_steps_must_come_after_their_dependencies():
    with pytest.raises(ValueError, match="before its dependencies"):
        run_steps([step("b", lambda a: a, "a"), step("a", lambda: 1)], 2)
    with pytest.raises(ValueError, match="twice"):
        run_steps([step("a", lambda: 1), step("a", lambda: 2)], 1)
