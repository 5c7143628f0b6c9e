"""Fault objects driven by the injector against FakeOps: effects, records, merging, overlaps, ends
(heal_all and heal: test_injector_heal.py)."""

import signal

import pytest

from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import FaultError, OverlappingFault, PlanError, UnsafeSignal
from rmqemu.faults.injector import Injector
from rmqemu.faults.kinds import (
    ClockFault,
    KillFault,
    LinkFault,
    PartitionFault,
    PauseFault,
    StopFault,
    build_fault,
)
from rmqemu.faults.ops import ClusterOps
from rmqemu.faults.testing import FakeOps

T0 = 1_000_000.0
BLOCK = LinkRule(blocked=True)


@pytest.fixture
def ops():
    return FakeOps(ack_ms=5.0)


@pytest.fixture
def inj(ops):
    return Injector(ops)


def partition(fid, links, targets=None):
    nodes = sorted({n for link in links for n in link})
    return PartitionFault(fid, tuple(targets or nodes), mode="groups", links=tuple(links))


def test_fake_ops_satisfies_the_protocol(ops):
    assert isinstance(ops, ClusterOps)


def test_kill_records_exit_and_start_after_the_effect(ops, inj):
    inj.start(KillFault("f1", ("broker-a-0",)))
    assert ops.calls_of("signal") == [("signal", "broker-a-0", signal.SIGKILL)]
    assert ops.state["broker-a-0"] == "dead"
    assert ops.exits == [("broker-a-0", 9, T0 + 5)]  # written when the kill took effect
    assert ops.events == [{"ts": T0 + 5, "kind": "fault.start", "node": "injector", "fault_id": "f1",
                           "fault": "kill", "targets": ["broker-a-0"],
                           "params": {"signal": 9, "restart_after_ms": None}}]
    assert ops.calls_of("set_links") == []  # nothing changed on the network


def test_kill_with_restart_logs_the_restart_as_its_own_fault(ops, inj):
    inj.start(partition("f0", [("pg-1-0", "namesrv-0")]))
    inj.start(KillFault("f1", ("broker-a-0",), restart_after_ms=200.0))
    inj.stop("f1")
    assert ops.state["broker-a-0"] == "running"
    assert ops.calls[-2:] == [("restart", "broker-a-0"), ("set_links", {("pg-1-0", "namesrv-0"): BLOCK})]
    assert ops.kinds()[1:] == [("fault.start", "f1", "kill"), ("fault.end", "f1", "kill"),
                               ("fault.start", "f1.restart", "restart"), ("fault.end", "f1.restart", "restart")]
    end, rstart = ops.events[2], ops.events[3]
    assert end["restarted"] is True and rstart["params"] == {"after_ms": 200.0}
    assert rstart["ts"] == end["ts"] == T0 + 5 * 4  # links, kill, restart, re-push
    assert inj.active() == [inj.get("f0")]


def test_stop_is_sigterm_and_the_node_logs_its_own_exit(ops, inj):
    inj.start(StopFault("f1", ("broker-b-0",)))
    assert ops.calls_of("signal") == [("signal", "broker-b-0", signal.SIGTERM)]
    assert ops.exits == [] and ops.events[0]["params"]["signal"] == 15


def test_pause_and_resume(ops, inj):
    inj.start(PauseFault("f1", ("namesrv-0", "namesrv-1")))
    assert ops.state["namesrv-0"] == ops.state["namesrv-1"] == "paused"
    inj.stop("f1")
    assert [c[2] for c in ops.calls_of("signal")] == [signal.SIGSTOP] * 2 + [signal.SIGCONT] * 2
    assert ops.state["namesrv-0"] == "running"
    assert ops.kinds() == [("fault.start", "f1", "pause"), ("fault.end", "f1", "pause")]
    assert ops.events[1]["reason"] == "scheduled"


def test_partial_kill_goes_on_and_notes_the_refusal():
    ops = FakeOps(spawned={"broker-a-0"})
    Injector(ops).start(KillFault("f1", ("broker-a-0", "broker-b-0")))
    assert ops.state["broker-a-0"] == "dead" and ops.state["broker-b-0"] == "running"
    event = ops.events[0]
    assert event["targets"] == ["broker-a-0"]
    assert "not a process this run spawned" in event["params"]["refused"]["broker-b-0"]


def test_fully_refused_kill_raises_and_leaves_nothing_behind():
    ops = FakeOps(spawned=set())
    inj = Injector(ops)
    with pytest.raises(UnsafeSignal, match="not a process this run spawned"):
        inj.start(KillFault("f1", ("broker-a-0",)))
    assert inj.active() == [] and ops.events == []


def test_overlapping_process_faults_are_refused_naming_the_holder(inj):
    inj.start(KillFault("f1", ("broker-a-0",), restart_after_ms=100.0))
    with pytest.raises(OverlappingFault, match=r"cannot start f2 \(pause broker-a-0,broker-b-0\): "
                                               r"broker-a-0 is held by f1 \(kill broker-a-0\)"):
        inj.start(PauseFault("f2", ("broker-a-0", "broker-b-0")))
    inj.start(PauseFault("f3", ("broker-b-0",)))  # other node: fine
    with pytest.raises(OverlappingFault, match="held by f3"):
        inj.start(StopFault("f4", ("broker-b-0",)))


def test_overlapping_clock_faults_are_refused(inj):
    inj.start(ClockFault("f1", ("namesrv-1",), mode="bump", offset_ms=1300.0))
    with pytest.raises(OverlappingFault, match=r"namesrv-1 is held by f1 \(clock namesrv-1\)"):
        inj.start(ClockFault("f2", ("namesrv-1",), mode="drift", drift_ppm=100.0))


def test_fault_ids_are_never_reused(inj):
    inj.start(PauseFault("f1", ("pg-1-0",)))
    inj.stop("f1")
    with pytest.raises(OverlappingFault, match="already used"):
        inj.start(PauseFault("f1", ("pg-1-0",)))
    assert inj.new_fault_id() == "i1"
    inj.start(PauseFault("i1", ("pg-1-0",)))
    assert inj.new_fault_id() == "i2"


def test_overlapping_partitions_merge_and_heal_separately(ops, inj):
    # docs/design.md §5: isolate namesrv-0, then a one-way cut namesrv-0 -> broker-b-0 on top
    iso = [("namesrv-0", "broker-b-0"), ("broker-b-0", "namesrv-0")]
    inj.start(partition("f1", iso, targets=["namesrv-0"]))
    inj.start(partition("f2", [("namesrv-0", "broker-b-0")]))
    assert ops.links == {link: BLOCK for link in iso}
    assert len(ops.calls_of("set_links")) == 1  # the second cut changed nothing: no push
    inj.stop("f1")
    assert ops.links == {("namesrv-0", "broker-b-0"): BLOCK}  # f2 still holds its link
    inj.stop("f2")
    assert ops.links == {} and ops.calls_of("set_links")[-1] == ("set_links", {})


def test_link_fault_merges_with_another_on_the_same_link(ops, inj):
    slow = LinkRule(delay_ms=100.0, jitter_ms=10.0, loss=0.5)
    inj.start(LinkFault("f1", ("pg-1-0",), links=(("pg-1-0", "broker-a-0"),), rule=slow))
    inj.start(LinkFault("f2", ("pg-1-0",), links=(("pg-1-0", "broker-a-0"), ("broker-a-0", "pg-1-0")),
                        rule=LinkRule(delay_ms=50.0, loss=0.5, duplicate=0.1)))
    assert ops.links == {("pg-1-0", "broker-a-0"): LinkRule(delay_ms=150.0, jitter_ms=10.0, loss=0.75,
                                                            duplicate=1 - 0.9),
                         ("broker-a-0", "pg-1-0"): LinkRule(delay_ms=50.0, loss=0.5, duplicate=0.1)}
    assert ops.events[1]["params"] == {"links": [["pg-1-0", "broker-a-0"], ["broker-a-0", "pg-1-0"]],
                                       "delay_ms": 50.0, "jitter_ms": 0.0, "loss": 0.5, "duplicate": 0.1}


def test_clock_bump_strobe_drift_and_end(ops, inj):
    inj.start(ClockFault("f1", ("namesrv-1",), mode="bump", offset_ms=1300.0))
    assert ops.clocks["namesrv-1"] == ClockSetting(offset_ms=1300.0)
    assert ops.events[-1]["params"] == {"mode": "bump", "offset_ms": 1300.0, "strobe_delta_ms": 0.0,
                                        "strobe_period_ms": 0.0, "drift_ppm": 0.0}
    ops.clock.current_ms = T0 + 1000
    inj.start(ClockFault("f2", ("namesrv-0",), mode="strobe", strobe_delta_ms=-200.0, strobe_period_ms=50.0))
    assert ops.clocks["namesrv-0"] == ClockSetting(strobe_delta_ms=-200.0, strobe_period_ms=50.0, since_ms=T0 + 1000)
    assert ops.events[-1]["params"]["since_ms"] == T0 + 1000
    inj.start(ClockFault("f3", ("broker-a-0",), mode="drift", drift_ppm=500.0))
    assert ops.clocks["broker-a-0"] == ClockSetting(drift_ppm=500.0, since_ms=T0 + 1005)  # after the strobe push acked
    inj.stop("f1")
    assert ops.clocks["namesrv-1"] == ClockSetting()
    assert inj.clock_setting("namesrv-0").strobe_period_ms == 50.0


def test_clock_reset_ends_the_holder_and_pushes_the_host_clock(ops, inj):
    inj.start(ClockFault("f1", ("namesrv-1", "namesrv-0"), mode="bump", offset_ms=-500.0))
    inj.start(ClockFault("f2", ("namesrv-1",), mode="reset"))
    assert ops.clocks == {n: ClockSetting() for n in ops.nodes}
    assert ops.kinds()[1:] == [("fault.end", "f1", "clock"), ("fault.start", "f2", "clock"),
                               ("fault.end", "f2", "clock")]
    assert ops.events[1]["reason"] == "reset by f2"
    assert inj.active() == []


def test_clock_on_a_paused_node_waits_until_it_resumes(ops, inj):
    inj.start(PauseFault("f1", ("namesrv-1",)))
    inj.start(ClockFault("f2", ("namesrv-1",), mode="bump", offset_ms=700.0))
    assert ops.calls_of("set_clock") == []  # a stopped process cannot ack
    inj.stop("f1")
    assert ops.calls_of("set_clock") == [("set_clock", "namesrv-1", ClockSetting(offset_ms=700.0))]


def test_restarted_node_gets_its_clock_back(ops, inj):
    inj.start(ClockFault("f1", ("broker-a-0",), mode="bump", offset_ms=700.0))
    inj.start(KillFault("f2", ("broker-a-0",), restart_after_ms=10.0))
    inj.stop("f2")
    assert ops.clocks["broker-a-0"] == ClockSetting(offset_ms=700.0)  # FakeOps.restart had reset it


def test_stop_unknown_and_stop_on(ops, inj):
    with pytest.raises(FaultError, match=r"no active fault 'f9' \(active: none\)"):
        inj.stop("f9")
    inj.start(PauseFault("f1", ("namesrv-0", "namesrv-1")))
    with pytest.raises(FaultError, match="no active pause fault on broker-a-0"):
        inj.stop_on(["broker-a-0"], "pause")
    assert inj.stop_on(["namesrv-1"], "pause") == ["f1"]
    assert ops.state["namesrv-0"] == "running"


def test_build_fault_round_trips_params():
    cases = [
        ("kill", {"signal": 9, "restart_after_ms": 200.0}),
        ("stop", {"signal": 15, "restart_after_ms": None}),
        ("pause", {"signal": 19}),
        ("partition", {"mode": "groups", "oneway": True, "links": [["a", "b"]], "groups": [["a"], ["b"]]}),
        ("link", {"links": [["a", "b"]], "delay_ms": 5.0, "jitter_ms": 1.0, "loss": 0.1, "duplicate": 0.0}),
        ("clock", {"mode": "bump", "offset_ms": 5.0, "strobe_delta_ms": 0.0, "strobe_period_ms": 0.0,
                   "drift_ppm": 0.0}),
    ]
    for kind, params in cases:
        fault = build_fault(kind, "f1", ["a"], params)
        assert (fault.kind, fault.params()) == (kind, params)


def test_build_fault_errors():
    with pytest.raises(PlanError, match="unknown fault kind 'nuke'"):
        build_fault("nuke", "f1", ["a"], {})
    with pytest.raises(PlanError, match="fault f2: bad params for partition"):
        build_fault("partition", "f2", ["a"], {"mode": "groups"})


def test_scheduled_stop_of_a_kill_without_restart_leaves_the_node_down(ops, inj):
    inj.start(KillFault("f1", ("broker-b-0",)))
    inj.stop("f1")
    assert ops.state["broker-b-0"] == "dead" and inj.down_nodes() == {"broker-b-0"}
    assert ops.events[-1]["restarted"] is False


def test_new_fault_ids_are_reserved(inj):
    assert [inj.new_fault_id() for _ in range(3)] == ["i1", "i2", "i3"]
    inj.start(PauseFault("i2", ("pg-1-0",)))  # a reserved id can be used once
    with pytest.raises(OverlappingFault, match="already used"):
        inj.start(PauseFault("i2", ("cg-1-0",)))


def test_a_failing_push_still_records_the_end(ops, inj):
    inj.start(partition("f1", [("pg-1-0", "broker-a-0")]))
    real = ops.set_links
    def broken(rules):
        raise FaultError("node namesrv-0 did not ack")
    ops.set_links = broken
    with pytest.raises(FaultError, match="did not ack"):
        inj.stop("f1")
    ops.set_links = real
    assert ops.events[-1]["kind"] == "fault.end" and ops.events[-1]["error"] == "node namesrv-0 did not ack"
    assert inj.active() == []


def test_an_interrupt_while_a_pause_takes_effect_is_still_healed(ops, inj):
    ops.fail[("signal", "namesrv-1")] = KeyboardInterrupt()  # Ctrl-C while the 2nd SIGSTOP is confirmed
    with pytest.raises(KeyboardInterrupt):
        inj.start(PauseFault("f1", ("namesrv-0", "namesrv-1")))
    assert ops.state["namesrv-0"] == "paused"
    assert [f.fault_id for f in inj.active()] == ["f1"]
    assert "KeyboardInterrupt" in ops.events[-1]["error"]
    assert inj.heal_all() == ["f1"]
    assert ops.state["namesrv-0"] == ops.state["namesrv-1"] == "running"
    assert [e["kind"] for e in ops.events] == ["fault.start", "fault.end"]


def test_ending_a_pause_resumes_every_target_past_one_that_fails(ops, inj):
    inj.start(PauseFault("p1", ("broker-a-0", "broker-b-0", "namesrv-0")))
    ops.fail[("signal", "broker-a-0")] = UnsafeSignal("boom")
    with pytest.raises(FaultError, match="could not resume broker-a-0"):
        inj.stop("p1")
    assert (ops.state["broker-b-0"], ops.state["namesrv-0"]) == ("running", "running")


def test_a_restart_that_fails_for_one_node_keeps_only_that_node_down(ops, inj):
    inj.start(KillFault("k1", ("broker-a-0", "broker-b-0"), restart_after_ms=100.0))
    ops.fail[("restart", "broker-b-0")] = FaultError("restart failed")
    with pytest.raises(FaultError, match="restart failed for broker-b-0"):
        inj.stop("k1")
    assert inj.down_nodes() == {"broker-b-0"} and ops.state["broker-a-0"] == "running"
    end = [e for e in ops.events if e["kind"] == "fault.end" and e["fault_id"] == "k1"][0]
    assert end["restarted"] is True and end["not_restarted"] == ["broker-b-0"]
    inj.start(ClockFault("c1", ("broker-a-0",), mode="bump", offset_ms=5000.0))  # reaches the restarted node
    assert ops.clocks["broker-a-0"] == ClockSetting(offset_ms=5000.0)
