"""The supervisor side of the interactive verbs on FakeOps: one injector across calls, timed ends
run by tick(), resume/heal, clear refusals, and everything healed on close()."""

import signal

import pytest

from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import FaultError, OverlappingFault, SpecError
from rmqemu.faults.supervisor_verbs import VerbServer, register_verbs
from rmqemu.faults.testing import FakeOps


@pytest.fixture
def ops():
    return FakeOps(ack_ms=1.0)


@pytest.fixture
def srv(ops):
    return VerbServer(ops, scale=0.01, seed=7, clock=ops.clock, log=lambda _m: None)


def test_pause_then_resume_across_calls(ops, srv):
    out = srv.handlers()["pause"]({"targets": ["broker-a-0"]})
    assert (out["fault_id"], out["fault"], out["targets"], out["ends_in_ms"]) == ("i1", "pause", ["broker-a-0"], None)
    assert ops.state["broker-a-0"] == "paused"
    with pytest.raises(OverlappingFault, match="broker-a-0 is held by i1"):
        srv.handlers()["kill"]({"targets": ["broker-a-0"]})
    assert srv.handlers()["resume"]({"targets": ["broker-a-0"]}) == {"healed": ["i1"]}
    assert ops.state["broker-a-0"] == "running"
    with pytest.raises(FaultError, match="no active pause fault on broker-a-0"):
        srv.resume({"targets": ["broker-a-0"]})


def test_timed_faults_end_on_tick_when_due(ops, srv):
    srv.start("pause", {"targets": ["broker-b-0"], "duration": "30s"})  # 300 ms wall at scale 0.01
    out = srv.start("kill", {"targets": ["broker-a-0"], "restart_after": "20s"})
    assert out["ends_in_ms"] == pytest.approx(200.0)
    srv.tick()
    assert ops.state["broker-a-0"] == "dead" and ops.state["broker-b-0"] == "paused"
    ops.clock.advance(200.0)
    srv.tick()
    assert ops.state["broker-a-0"] == "running" and ops.state["broker-b-0"] == "paused"
    ops.clock.advance(100.0)
    srv.tick()
    assert ops.state["broker-b-0"] == "running"
    assert srv.list_faults({})["active"] == []
    assert ("fault.start", "i2.restart", "restart") in ops.kinds()


def test_a_timed_fault_ended_by_hand_is_skipped_by_tick(ops, srv):
    srv.start("pause", {"targets": ["namesrv-0"], "duration": "10s"})
    srv.resume({"targets": ["namesrv-0"]})
    srv.start("pause", {"targets": ["namesrv-0"]})  # a new, untimed pause of the same node
    ops.clock.advance(1000.0)
    srv.tick()
    assert ops.state["namesrv-0"] == "paused"


def test_partition_link_and_skew_push_merged_effects(ops, srv):
    part = srv.start("partition", {"targets": ["namesrv-0"], "from": ["broker-a-0"], "oneway": True})
    assert part["params"]["links"] == [["namesrv-0", "broker-a-0"]]
    srv.start("link", {"targets": ["pg-1-0"], "to": ["broker-a-0"], "delay": "2s", "oneway": True})
    assert ops.links == {("namesrv-0", "broker-a-0"): LinkRule(blocked=True),
                         ("pg-1-0", "broker-a-0"): LinkRule(delay_ms=20.0)}
    skew = srv.start("skew", {"targets": ["namesrv-1"], "value": "+130s"})
    assert skew["params"]["offset_ms"] == pytest.approx(1300.0)
    assert ops.clocks["namesrv-1"] == ClockSetting(offset_ms=1300.0)
    reset = srv.start("skew", {"targets": ["namesrv-1"], "value": "reset"})
    assert reset["active"] is False and ops.clocks["namesrv-1"] == ClockSetting()
    assert [f["fault_id"] for f in srv.list_faults({})["active"]] == ["i1", "i2"]


def test_heal_given_ids_or_everything_restarting_killed_nodes(ops, srv):
    srv.start("kill", {"targets": ["broker-a-0"]})
    srv.start("pause", {"targets": ["namesrv-0"]})
    srv.start("partition", {"targets": ["namesrv-1"]})
    with pytest.raises(FaultError, match=r"heal: no active fault i9 \(active: i1, i2, i3\)"):
        srv.heal({"fault_ids": ["i9"]})
    assert srv.heal({"fault_ids": ["i2"]}) == {"healed": ["i2"]}
    assert ops.state["namesrv-0"] == "running"
    assert srv.heal({}) == {"healed": ["i3", "i1"]}
    assert ops.state["broker-a-0"] == "running" and ops.links == {}


def test_close_heals_everything_but_leaves_killed_nodes_down(ops, srv):
    srv.start("kill", {"targets": ["broker-a-0"], "restart_after": "60s"})
    srv.start("pause", {"targets": ["namesrv-0"], "duration": "60s"})
    srv.start("skew", {"targets": ["namesrv-1"], "value": "500ppm"})
    srv.close()
    assert ops.state == {**ops.state, "namesrv-0": "running", "broker-a-0": "dead"}
    assert ops.clocks["namesrv-1"] == ClockSetting()
    assert srv.injector.active() == [] and srv.pending == []
    ends = [e for e in ops.events if e["kind"] == "fault.end"]
    assert sorted(e["fault_id"] for e in ends) == ["i1", "i2", "i3"]


def test_refusals_are_clear(ops, srv):
    with pytest.raises(FaultError, match=r"^kill: unknown target 'nosuch', expected a node name \(namesrv-0"):
        srv.start("kill", {"targets": ["nosuch"]})
    with pytest.raises(SpecError, match="--duration: expected a duration"):
        srv.start("pause", {"targets": ["namesrv-0"], "duration": "soon"})
    with pytest.raises(FaultError, match="unknown node\\(s\\) ghost"):
        srv.resume({"targets": ["ghost"]})
    ops.spawned.discard("pg-1-0")
    with pytest.raises(FaultError, match="not a process this run spawned"):
        srv.start("pause", {"targets": ["pg-1-0"]})
    assert ops.calls_of("signal")[-1] == ("signal", "pg-1-0", signal.SIGSTOP)
    assert srv.injector.active() == []


def test_selectors_draw_from_a_seeded_rng(ops):
    picks = []
    for _ in range(2):
        o = FakeOps()
        s = VerbServer(o, scale=0.01, seed=3, clock=o.clock, log=lambda _m: None)
        picks.append([s.start("pause", {"targets": ["one:broker"], "duration": "1s"})["targets"] for _ in range(1)])
    assert picks[0] == picks[1]


def test_register_verbs_adds_the_commands():
    class FakeCluster(FakeOps):
        scale = 0.01

        class topo:
            seed = 1

    commands = {"status": lambda a: {}}
    server = register_verbs(commands, FakeCluster())
    assert {"kill", "stop", "pause", "resume", "partition", "link", "skew", "heal", "faults"} <= set(commands)
    assert callable(server.tick) and callable(server.close)
