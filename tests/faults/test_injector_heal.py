"""Healing through the injector against FakeOps: heal_all and heal by kind, restarts of killed
nodes, and a heal that goes on past a failing step."""

import pytest

from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import FaultError, UnsafeSignal
from rmqemu.faults.kinds import ClockFault, KillFault, LinkFault, PauseFault
from tests.faults.test_injector import inj, ops, partition  # noqa: F401  (the fixtures)


def test_heal_all_resumes_clears_resets_and_leaves_killed_nodes_dead(ops, inj):  # noqa: F811
    inj.start(KillFault("f1", ("broker-b-0",), restart_after_ms=100.0))
    inj.start(PauseFault("f2", ("namesrv-0",)))
    inj.start(partition("f3", [("pg-1-0", "broker-a-0")]))
    inj.start(ClockFault("f4", ("namesrv-1",), mode="bump", offset_ms=1.0))
    inj.start(LinkFault("f5", ("cg-1-0",), links=(("cg-1-0", "broker-a-0"),), rule=LinkRule(loss=0.1)))
    assert inj.heal_all() == ["f5", "f4", "f3", "f2", "f1"]
    assert inj.active() == []
    assert ops.state == {**{n: "running" for n in ops.nodes}, "broker-b-0": "dead"}
    assert ops.links == {} and all(s == ClockSetting() for s in ops.clocks.values())
    ends = [e for e in ops.events if e["kind"] == "fault.end"]
    assert [e["reason"] for e in ends] == ["heal_all"] * 5 and ends[-1]["restarted"] is False
    assert "restart" not in [c[0] for c in ops.calls]


def test_heal_all_can_restart_killed_nodes(ops, inj):  # noqa: F811
    inj.start(KillFault("f1", ("broker-b-0",), restart_after_ms=100.0))
    inj.heal_all(restart_killed=True)
    assert ops.state["broker-b-0"] == "running"
    assert ("fault.start", "f1.restart", "restart") in ops.kinds()


def test_heal_all_goes_on_past_a_failure_and_reports_it(ops, inj):  # noqa: F811
    inj.start(PauseFault("f1", ("namesrv-0",)))
    inj.start(PauseFault("f2", ("namesrv-1",)))
    inj.start(partition("f3", [("pg-1-0", "broker-a-0")]))
    ops.fail[("signal", "namesrv-0")] = UnsafeSignal("pid reused")
    with pytest.raises(FaultError, match=r"healing failed for f1 \(pause namesrv-0\): could not resume "
                                         r"namesrv-0: UnsafeSignal: pid reused"):
        inj.heal_all()
    assert inj.active() == [] and ops.links == {} and ops.state["namesrv-1"] == "running"
    end_f1 = [e for e in ops.events if e["kind"] == "fault.end" and e["fault_id"] == "f1"]
    assert end_f1[0]["error"] == "could not resume namesrv-0: UnsafeSignal: pid reused"
    assert end_f1[0]["params"]["resume_failed"] == {"namesrv-0": "UnsafeSignal: pid reused"}


def test_killed_node_is_not_pushed_to_after_its_fault_ended(ops, inj):  # noqa: F811
    inj.start(ClockFault("f1", ("broker-b-0",), mode="bump", offset_ms=9.0))
    inj.start(KillFault("f2", ("broker-b-0",)))
    inj.heal_all()  # FakeOps.set_clock would raise for a dead node
    assert ops.state["broker-b-0"] == "dead"


def test_heal_only_some_kinds(ops, inj):  # noqa: F811
    inj.start(PauseFault("f1", ("namesrv-0",)))
    inj.start(partition("f2", [("pg-1-0", "broker-a-0")]))
    assert inj.heal(["partition", "link"]) == ["f2"]
    assert [f.fault_id for f in inj.active()] == ["f1"]


def test_heal_with_restart_killed_restarts_even_without_restart_after(ops, inj):  # noqa: F811
    inj.start(KillFault("f1", ("broker-b-0",)))
    inj.heal_all(restart_killed=True)
    assert ops.state["broker-b-0"] == "running"
    assert ops.kinds()[-2:] == [("fault.start", "f1.restart", "restart"), ("fault.end", "f1.restart", "restart")]


def test_a_link_push_that_fails_still_lets_the_clocks_be_reset(ops, inj):  # noqa: F811
    inj.start(ClockFault("c1", ("namesrv-1",), mode="bump", offset_ms=130_000.0))
    inj.start(partition("x1", [("pg-1-0", "broker-a-0")]))
    ops.fail[("set_links", "*")] = FaultError("broker-a-0: no ack")
    with pytest.raises(FaultError, match="no ack"):
        inj.heal_all()
    assert ops.clocks["namesrv-1"] == ClockSetting()  # the clock reset was not skipped
    assert inj.active() == [] and ops.links == {}  # and the final push cleared the links
