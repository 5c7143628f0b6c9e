"""Role terms bound when a step fires, on FakeOps: every kind that takes targets hits the leader of
that moment, records it, heals what it hit; a step that finds nothing to hit is skipped."""

import re
import signal

import pytest

from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.errors import FaultError
from rmqemu.events import problems
from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan, run_plan_steps, run_step
from rmqemu.faults.schedule import plan_from_specs
from rmqemu.faults.supervisor_verbs import VerbServer
from rmqemu.faults.testing import FakeOps, dledger_nodes

A = ("broker-a-n0", "broker-a-n1", "broker-a-n2")
NO_LEADER = "broker-a has no DLedger leader now (an election is under way?)"


@pytest.fixture
def ops():
    ops = FakeOps(dledger_nodes({"broker-a": 3, "broker-c": 3}), ack_ms=1.0)
    ops.leaders = {"broker-a": "broker-a-n1", "broker-c": "broker-c-n0"}
    return ops


def plan_of(ops, *entries, duration_s=None):
    specs = [FaultSpec.model_validate(e) for e in entries]
    return plan_from_specs(specs, ops.node_infos(), seed=3, scale=0.01, duration_s=duration_s)


def starts(ops):
    return {e["fault_id"]: e for e in ops.events if e["kind"] == "fault.start"}


def test_the_leader_is_asked_when_the_step_fires_not_when_the_plan_is_built(ops):
    start, stop = plan_of(ops, {"at": 1, "kill": "leader:broker-a", "restart_after": 5}).steps
    assert start.targets == ("leader:broker-a",) and ops.calls_of("dledger_leader") == []
    ops.leaders["broker-a"] = "broker-a-n2"
    inj = Injector(ops)
    run_step(start, inj)
    assert ops.calls_of("dledger_leader") == [("dledger_leader", "broker-a")]
    assert starts(ops)["f1"]["targets"] == ["broker-a-n2"] and ops.exits[0][:2] == ("broker-a-n2", 9)


def test_a_kill_restarts_the_node_it_killed_even_after_a_new_election(ops):
    start, stop = plan_of(ops, {"at": 1, "kill": "leader:broker-a", "restart_after": 5}).steps
    inj = Injector(ops)
    run_step(start, inj)
    ops.leaders["broker-a"] = "broker-a-n0"  # the group elected another leader meanwhile
    run_step(stop, inj)
    assert ops.calls_of("restart") == [("restart", "broker-a-n1")]
    assert ops.calls_of("dledger_leader") == [("dledger_leader", "broker-a")]  # the heal did not ask again
    ends = [e for e in ops.events if e["kind"] == "fault.end"]
    assert [e["targets"] for e in ends] == [["broker-a-n1"], ["broker-a-n1"]]  # the kill, its restart


def test_a_pause_resumes_what_it_paused_and_a_stop_is_sigterm(ops):
    plan = plan_of(ops, {"at": 1, "pause": "leader:broker-a", "duration": 2},
                   {"at": 1, "stop": "followers:broker-c"})
    inj = Injector(ops)
    run_step(plan.steps[0], inj)
    run_step(plan.steps[1], inj)
    ops.leaders["broker-a"] = "broker-a-n2"
    run_step(plan.steps[2], inj)
    assert [c for c in ops.calls_of("signal") if c[1].startswith("broker-a")] == [
        ("signal", "broker-a-n1", signal.SIGSTOP), ("signal", "broker-a-n1", signal.SIGCONT)]
    assert starts(ops)["f2"]["targets"] == ["broker-c-n1", "broker-c-n2"]
    assert ops.state["broker-c-n1"] == ops.state["broker-c-n2"] == "dead" and ops.state["broker-c-n0"] == "running"


def test_a_clock_fault_skews_the_leader_and_its_heal_resets_that_node(ops):
    plan = plan_of(ops, {"at": 1, "clock": "bump", "targets": ["leader:broker-c", "namesrv-0"], "offset": "30s",
                         "duration": 2})
    inj = Injector(ops)
    run_step(plan.steps[0], inj)
    ops.leaders["broker-c"] = "broker-c-n2"
    run_step(plan.steps[1], inj)
    assert [c[1] for c in ops.calls_of("set_clock")] == ["broker-c-n0", "namesrv-0", "broker-c-n0", "namesrv-0"]
    assert ops.clocks["broker-c-n0"] == ClockSetting() and starts(ops)["f1"]["targets"] == ["namesrv-0", "broker-c-n0"]


def test_a_link_fault_from_the_leader_to_the_namesrvs(ops):
    plan = plan_of(ops, {"at": 1, "link": "leader:broker-a", "to": ["namesrv"], "delay": 1, "duration": 2})
    assert plan.steps[0].params["links"] == [] and plan.steps[0].params["to"] == ["namesrv-0", "namesrv-1"]
    run_plan(plan, Injector(ops), ops.clock, ops.clock.advance)
    params = starts(ops)["f1"]["params"]
    assert params["links"] == [["broker-a-n1", "namesrv-0"], ["broker-a-n1", "namesrv-1"],
                               ["namesrv-0", "broker-a-n1"], ["namesrv-1", "broker-a-n1"]]
    assert set(params) == {"links", "delay_ms", "jitter_ms", "loss", "duplicate"}  # no plan-only key recorded
    assert ops.links == {}  # healed


def test_a_link_fault_towards_the_followers_only_one_way(ops):
    plan = plan_of(ops, {"at": 1, "link": "pg-1-0", "to": ["followers:broker-a"], "oneway": True, "loss": 0.5})
    run_step(plan.steps[0], Injector(ops))
    assert starts(ops)["f1"]["params"]["links"] == [["pg-1-0", "broker-a-n0"], ["pg-1-0", "broker-a-n2"]]


def test_partition_groups_cut_the_leader_from_its_followers_only(ops):
    plan = plan_of(ops, {"at": 1, "partition": "groups", "groups": [["leader:broker-a"], ["followers:broker-a"]],
                         "duration": 2})
    inj = Injector(ops)
    run_step(plan.steps[0], inj)
    assert set(ops.links) == {("broker-a-n1", "broker-a-n0"), ("broker-a-n1", "broker-a-n2"),
                              ("broker-a-n0", "broker-a-n1"), ("broker-a-n2", "broker-a-n1")}
    assert starts(ops)["f1"]["params"]["groups"] == [["broker-a-n1"], ["broker-a-n0", "broker-a-n2"]]
    run_step(plan.steps[1], inj)
    assert ops.links == {}


def test_isolating_the_leader_cuts_it_from_every_node(ops):
    plan = plan_of(ops, {"at": 1, "partition": "isolate", "targets": ["leader:broker-c"]})
    run_step(plan.steps[0], Injector(ops))
    others = [n for n in ops.nodes if n != "broker-c-n0"]
    assert set(ops.links) == {("broker-c-n0", n) for n in others} | {(n, "broker-c-n0") for n in others}
    assert starts(ops)["f1"]["targets"] == ["broker-c-n0"]


def test_no_leader_skips_the_step_records_fault_error_and_the_plan_goes_on(ops):
    ops.leaders["broker-a"] = None
    plan = plan_of(ops, {"at": 1, "kill": "leader:broker-a", "restart_after": 2},
                   {"at": 2, "pause": "namesrv-0", "duration": 2})
    result = run_plan_steps(plan, Injector(ops), ops.clock, ops.clock.advance)  # launch's entry: no continue_on_error
    assert ops.kinds()[0] == ("fault.error", "f1", "kill")
    error = ops.events[0]
    assert error["targets"] == ["leader:broker-a"] and error["action"] == "start"
    assert error["error"] == f"skipped when it fired: nothing to hit: leader:broker-a: {NO_LEADER}"
    assert ("fault.start", "f2", "pause") in ops.kinds() and ops.calls_of("signal")[0][1] == "namesrv-0"
    assert len(result.skipped) == 2 and "not active any more" in result.skipped[1]  # its stop, too
    assert ops.exits == []


def test_a_dead_leader_is_no_leader(ops):
    ops.state["broker-a-n1"] = "dead"
    plan = plan_of(ops, {"at": 1, "pause": "leader:broker-a"})
    assert run_step(plan.steps[0], Injector(ops)).endswith(NO_LEADER)


def test_every_leader_hits_the_groups_that_have_one_and_names_the_others(ops):
    ops.leaders["broker-a"] = None
    plan = plan_of(ops, {"at": 1, "pause": "leader", "duration": 1})
    run_plan(plan, Injector(ops), ops.clock, ops.clock.advance)
    start = starts(ops)["f1"]
    assert start["targets"] == ["broker-c-n0"] and start["params"]["refused"] == {"leader:broker-a": NO_LEADER}


def test_a_peer_another_fault_holds_is_left_out(ops):
    """Two faults aimed at roles may overlap: the later takes what is free when it fires."""
    plan = plan_of(ops, {"at": 1, "pause": "leader:broker-a", "duration": 10},
                   {"at": 2, "kill": "followers:broker-a"},
                   {"at": 3, "stop": "leader:broker-a"})
    inj = Injector(ops)
    run_step(plan.steps[0], inj)  # pauses broker-a-n1
    ops.leaders["broker-a"] = "broker-a-n0"  # elected while n1 is paused
    run_step(plan.steps[1], inj)
    kill = starts(ops)["f2"]
    assert kill["targets"] == ["broker-a-n2"]
    assert kill["params"]["refused"] == {"broker-a-n1": "held by f1 (pause broker-a-n1)"}
    ops.leaders["broker-a"] = "broker-a-n1"  # the paused peer is still said to lead
    assert run_step(plan.steps[2], inj) == ("start f3 (stop leader:broker-a) at 30 ms: skipped when it fired: "
                                            "nothing to hit: broker-a-n1: held by f1 (pause broker-a-n1)")
    assert ops.state["broker-a-n1"] == "paused"


def test_a_peer_an_earlier_kill_left_down_is_not_signalled_again(ops):
    plan = plan_of(ops, {"at": 1, "kill": "broker-a-n0", "restart_after": 0.5},
                   {"at": 2, "pause": "followers:broker-a", "duration": 1},
                   {"at": 3, "clock": "bump", "targets": "followers:broker-a", "offset": 1})
    inj = Injector(ops)
    step = {(s.fault_id, s.action): s for s in plan.steps}
    run_step(step["f1", "start"], inj)
    inj.stop("f1", restart=False)  # the kill ended without its restart (a heal does that): its node stays down
    run_step(step["f2", "start"], inj)
    pause = starts(ops)["f2"]
    assert pause["targets"] == ["broker-a-n2"]
    assert pause["params"]["refused"] == {"broker-a-n0": "down: an earlier fault ended it and it was not restarted"}
    run_step(step["f3", "start"], inj)  # a clock setting waits for a down node: it is taken
    assert starts(ops)["f3"]["targets"] == ["broker-a-n0", "broker-a-n2"]


def test_the_verb_server_binds_now_and_refuses_when_there_is_no_leader(ops):
    srv = VerbServer(ops, scale=0.01, seed=7, clock=ops.clock, log=lambda _m: None)
    out = srv.start("kill", {"targets": ["leader:broker-c"], "restart_after": "5s"})
    assert out["targets"] == ["broker-c-n0"] and out["ends_in_ms"] == pytest.approx(50.0)
    ops.leaders["broker-a"] = None
    refused = f"pause: nothing to hit: leader:broker-a: {NO_LEADER}; nothing was started"
    with pytest.raises(FaultError, match=f"^{re.escape(refused)}$"):
        srv.start("pause", {"targets": ["leader:broker-a"]})
    with pytest.raises(FaultError, match=r"^pause: leader:broker-x: broker-x is not a DLedger group \(DLedger groups: "
                                         r"broker-a, broker-c\)$"):
        srv.start("pause", {"targets": ["leader:broker-x"]})
    ops.clock.advance(50.0)
    srv.tick()
    assert ops.state["broker-c-n0"] == "running" and srv.list_faults({})["active"] == []


def test_every_line_a_role_plan_writes_is_a_registered_event(ops):
    """Resolved targets, refusals keyed by a role term, a skipped step: all in the event registry."""
    ops.leaders["broker-c"] = None
    plan = plan_of(ops, {"at": 1, "kill": "leader:broker-a", "restart_after": 1},
                   {"at": 3, "pause": "leader", "duration": 1},
                   {"at": 5, "partition": "isolate", "targets": "followers:broker-c", "duration": 1},
                   {"at": 7, "link": "leader:broker-a", "to": "followers:broker-a", "loss": 0.5, "duration": 1})
    run_plan(plan, Injector(ops), ops.clock, ops.clock.advance)
    assert {e["kind"] for e in ops.events} == {"fault.start", "fault.end", "fault.error"}
    assert [(e["fault_id"], problems(e)) for e in ops.events if problems(e)] == []
