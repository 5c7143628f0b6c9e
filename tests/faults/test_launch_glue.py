"""How `rmqemu launch` runs a plan (faults.launch_glue) on FakeOps: every step runs even late,
faults without an end last to the end of the run, failures name the seed and the replay command."""

import signal
from pathlib import Path

import pytest

from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.errors import ControlError, HostOverloaded, PlanError, PlanFailed, UnsafeSignal
from rmqemu.faults.launch_glue import build_plan, drive_plan
from rmqemu.faults.schedule import plan_from_specs
from rmqemu.faults.testing import FakeOps


class FakeCluster(FakeOps):
    """FakeOps with the one attribute drive_plan reads from a Cluster."""

    def __init__(self, run_dir: Path, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run_dir = run_dir


def specs(*entries):
    return [FaultSpec.model_validate(e) for e in entries]


def drive(cluster: FakeCluster, plan, total_ms: float) -> None:
    t0 = cluster.clock()
    drive_plan(cluster, plan, pump_for=lambda ms: cluster.clock.advance(max(ms, 0.0)),
               elapsed_ms=lambda: cluster.clock() - t0, total_ms=total_ms)


def test_late_steps_still_run_and_unended_faults_last_until_the_end(tmp_path):
    c = FakeCluster(tmp_path, ack_ms=0.0)
    plan = plan_from_specs(specs({"at": 1, "kill": "broker-a-0", "restart_after": 1},
                                 {"at": 3, "clock": "bump", "targets": ["namesrv-0"], "offset": "130s"}),
                           c.node_infos(), seed=3, scale=0.01, duration_s=4)
    original = c.restart

    def slow_restart(node):  # a restart that takes longer than the rest of the run
        original(node)
        c.clock.advance(5_000)

    c.restart = slow_restart
    drive(c, plan, total_ms=40.0)
    assert (tmp_path / "plan.json").read_text() == plan.to_json()
    starts = [e["fault_id"] for e in c.events if e["kind"] == "fault.start"]
    assert starts == ["f1", "f1.restart", "f2"]  # f2 ran, late
    ends = {e["fault_id"]: e for e in c.events if e["kind"] == "fault.end"}
    assert ends["f2"]["reason"] == "heal_all"


def test_a_failed_step_names_the_seed_and_the_run_to_replay(tmp_path):
    c = FakeCluster(tmp_path)
    plan = plan_from_specs(specs({"at": 0, "pause": "broker-a-0", "duration": 10}), c.node_infos(), seed=9, scale=0.01)
    c.fail[("signal", "broker-a-0")] = UnsafeSignal("refusing to signal broker-a-0: pid reused")
    with pytest.raises(PlanFailed, match=rf"pid reused \[seed 9; replay with: rmqemu launch --replay {tmp_path}\]"):
        drive(c, plan, total_ms=1000.0)


def test_a_cluster_error_during_the_plan_is_a_plan_failure_and_everything_is_healed(tmp_path):
    c = FakeCluster(tmp_path)
    plan = plan_from_specs(specs({"at": 0, "pause": "namesrv-0", "duration": 10},
                                 {"at": 0, "kill": "broker-a-0", "restart_after": 1}),
                           c.node_infos(), seed=4, scale=0.01)
    c.fail[("restart", "broker-a-0")] = ControlError("broker-a-0: no ack to 'set_links' within 5000 ms")
    with pytest.raises(PlanFailed, match=r"no ack .* \[seed 4; replay with: rmqemu launch --replay "):
        drive(c, plan, total_ms=1000.0)
    assert c.state["namesrv-0"] == "running"


def test_an_overloaded_host_is_said_first_not_as_a_failed_plan(tmp_path):
    """A link push the host was too slow to acknowledge (docs/design.md §9, "Overload") is not the
    plan's failure: the error reaches the user as it is, the true cause first."""
    c = FakeCluster(tmp_path)
    plan = plan_from_specs(specs({"at": 0, "partition": "groups", "groups": [["pg-1-0"], ["broker-b-0"]],
                                  "duration": 10}), c.node_infos(), seed=5, scale=0.01)
    c.fail[("set_links", "*")] = HostOverloaded("the host cannot keep up with 7 nodes at timing.scale 0.01: ...",
                                                {"namesrv-0": 4000.0})
    with pytest.raises(HostOverloaded, match=r"^the host cannot keep up with 7 nodes"):
        drive(c, plan, total_ms=1000.0)
    assert c.links == {}  # healed all the same


def test_build_plan_errors_name_the_seed(tmp_path):
    from rmqemu.emulator.launcher.topology_load import parse_topology

    topo = parse_topology({"name": "t", "seed": 11, "brokers": [{"name": "broker-a"}], "duration": "20s"}, "t")
    with pytest.raises(PlanError, match=r"no room for a fault .* \[seed 11\]"):
        build_plan(topo, nemesis="kill", interval="10s")


def test_a_heal_that_fails_after_a_failed_step_keeps_the_seed_and_adds_a_note(tmp_path):
    """The plan fails at a step (its PlanFailed carries the seed), then healing fails too: the
    error the user sees is still the plan failure, with the heal failure as a note."""

    class NoResume(FakeCluster):
        def signal(self, node, sig):
            if node == "namesrv-0" and sig == signal.SIGCONT:
                raise UnsafeSignal("cannot resume namesrv-0")
            super().signal(node, sig)

    c = NoResume(tmp_path)
    plan = plan_from_specs(specs({"at": 0, "pause": "namesrv-0", "duration": 10},
                                 {"at": 0.5, "pause": "broker-a-0", "duration": 10}),
                           c.node_infos(), seed=11, scale=0.01)
    c.fail[("signal", "broker-a-0")] = UnsafeSignal("refusing to signal broker-a-0: pid reused")
    with pytest.raises(PlanFailed, match=r"pid reused \[seed 11; replay with") as info:
        drive(c, plan, total_ms=1000.0)
    assert any("healing failed" in n and "cannot resume namesrv-0" in n for n in info.value.__notes__)
