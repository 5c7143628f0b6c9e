"""The nemesis names aimed at DLedger roles: leader-kill, leader-pause, group-partition. Seeded,
refused without a DLedger group, disjoint under --concurrency, and bound when they fire."""

import pytest

from rmqemu.emulator.launcher.fault_spec import PARTITION_MODES
from rmqemu.errors import PlanError
from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan
from rmqemu.faults.nemesis import parse_nemesis_kinds, random_plan
from rmqemu.faults.partition import GROUP_MODES
from rmqemu.faults.roles import peers_touched
from rmqemu.faults.testing import FakeOps, dledger_nodes, sample_nodes

NODES = dledger_nodes({"broker-a": 3, "broker-c": 5}, classic={"broker-b": 1})
needs_group_modes = pytest.mark.skipif(
    not set(GROUP_MODES) <= set(PARTITION_MODES),
    reason="fault_spec.PARTITION_MODES lacks leader-alone, leader-minority, leader-majority")


def starts(plan):
    return [s for s in plan.steps if s.action == "start"]


def test_the_role_names_are_nemesis_kinds():
    assert parse_nemesis_kinds("leader-kill, leader-pause,group-partition,kill") == [
        "leader-kill", "leader-pause", "group-partition", "kill"]
    with pytest.raises(PlanError, match=r"unknown nemesis kind\(s\) leader-stop; .*\(with DLedger groups also "
                                        r"leader-kill, leader-pause, group-partition\)"):
        parse_nemesis_kinds("leader-stop")


def test_without_a_dledger_group_the_role_names_are_refused():
    with pytest.raises(PlanError, match="nemesis leader-kill: needs a DLedger broker group, and this topology has no"):
        random_plan("leader-kill", "10s", "100s", sample_nodes(), 1, 0.01)


def test_leader_kill_and_pause_aim_at_one_groups_leader_for_an_interval():
    plan = random_plan("leader-kill,leader-pause", "10s", "100s", NODES, 3, 0.01)
    assert plan == random_plan("leader-kill,leader-pause", "10s", "100s", NODES, 3, 0.01)
    for step in starts(plan):
        assert step.kind in ("kill", "pause") and step.targets in (("leader:broker-a",), ("leader:broker-c",))
        assert step.note.endswith("resolved when the step fires, from the DLedger leader then")
        if step.kind == "kill":
            assert step.params == {"restart_after_ms": 100.0}
    stops = [s for s in plan.steps if s.action == "stop"]
    assert [s.at_ms - 100.0 for s in stops] == [s.at_ms for s in starts(plan)]  # held one interval
    drawn = {s.targets for seed in range(12) for s in starts(random_plan("leader-kill", 10, 100, NODES, seed, 1))}
    assert drawn == {("leader:broker-a",), ("leader:broker-c",)}


def test_the_plain_kinds_never_aim_at_roles():
    """Only the role names aim at a leader: kill, pause, ... stay on namesrvs and master/slave brokers."""
    for seed in range(10):
        plan = random_plan("kill,pause,clock,link", 10, 100, NODES, seed, 1)
        assert all(":" not in t and "-n" not in t for s in plan.steps for t in s.targets)
        assert all(s.note == "" for s in plan.steps)


def test_role_faults_run_together_only_on_disjoint_groups():
    together = 0
    for seed in range(10):
        plan = random_plan("leader-kill,leader-pause,pause", 10, 200, NODES, seed, 0.01, concurrency=3)
        by_time: dict[float, list[set[str]]] = {}
        for step in starts(plan):
            touched = {t for t in step.targets if ":" not in t} | peers_touched(step.targets, NODES)
            by_time.setdefault(step.at_ms, []).append(touched)
        for sets in by_time.values():
            together += len(sets) > 1
            assert sum(len(s) for s in sets) == len(set().union(*sets))
    assert together > 0


def test_a_nemesis_plan_hits_the_leaders_of_then():
    ops = FakeOps(NODES)
    ops.leaders = {"broker-a": "broker-a-n2", "broker-c": "broker-c-n3"}
    plan = random_plan("leader-kill,leader-pause", 10, 100, NODES, 3, 0.01)
    run_plan(plan, Injector(ops), ops.clock, ops.clock.advance)
    hit = [e["targets"] for e in ops.events if e["kind"] == "fault.start" and e["fault"] in ("kill", "pause")]
    assert hit and all(t in (["broker-a-n2"], ["broker-c-n3"]) for t in hit)
    assert all(state == "running" for state in ops.state.values())  # restarted, resumed


@needs_group_modes
def test_group_partition_draws_a_mode_the_groups_size_allows():
    modes = {}
    for seed in range(30):
        for step in starts(random_plan("group-partition", 10, 100, dledger_nodes({"g2": 2, "g5": 5}), seed, 1)):
            group = step.targets[0].rsplit("-", 1)[0]
            modes.setdefault(group, set()).add(step.params["mode"])
            assert sorted(step.params["peers"]) == list(step.targets)
    assert modes == {"g2": {"leader-alone"}, "g5": set(GROUP_MODES)}
