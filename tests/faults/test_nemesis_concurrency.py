"""``--concurrency N``: nemesis faults at once, never two on one node (docs/design.md §4)."""

from __future__ import annotations

import pytest

from rmqemu.errors import PlanError
from rmqemu.faults.nemesis import random_plan
from rmqemu.faults.testing import sample_nodes

NODES = sample_nodes()

KINDS = "kill,stop,pause,partition,link,clock"


def _touched(step) -> set[str]:
    return {*step.targets, *(n for link in step.params.get("links") or [] for n in link)}


def test_concurrency_one_is_the_plan_without_the_option() -> None:
    for seed in range(5):
        assert random_plan(KINDS, "20s", "400s", NODES, seed, 0.01, concurrency=1).to_json() == \
            random_plan(KINDS, "20s", "400s", NODES, seed, 0.01).to_json()


def test_faults_run_together_but_never_share_a_node() -> None:
    together = 0
    for seed in range(20):
        plan = random_plan("kill,pause,clock", "20s", "400s", NODES, seed, 0.01, concurrency=3)
        assert plan == random_plan("kill,pause,clock", "20s", "400s", NODES, seed, 0.01, concurrency=3)  # seeded
        assert plan.origin["concurrency"] == 3
        active: dict[str, set[str]] = {}
        for step in plan.steps:  # sorted by time: starts and stops
            if step.action == "stop":
                active.pop(step.fault_id, None)
                continue
            nodes = _touched(step)
            for other, held in active.items():
                assert not nodes & held, (seed, step.fault_id, other, nodes & held)
            active[step.fault_id] = nodes
            together = max(together, len(active))
    assert together >= 2  # the option did something


def test_concurrency_out_of_range_is_refused() -> None:
    for bad in (0, 17, True):
        with pytest.raises(PlanError, match="--concurrency"):
            random_plan("kill", "20s", "400s", NODES, 1, 0.01, concurrency=bad)
