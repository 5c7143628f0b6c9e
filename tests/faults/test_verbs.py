"""The interactive verbs' argument helpers, and running a one-fault plan on a live (fake) cluster."""

import random

import pytest

from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.errors import SpecError
from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan_steps
from rmqemu.faults.kinds import PauseFault
from rmqemu.faults.testing import FakeOps, sample_nodes
from rmqemu.faults.verbs import (
    link_spec,
    one_fault_plan,
    parse_partition_args,
    parse_skew,
    partition_spec,
    process_spec,
    skew_spec,
)

NODES = sample_nodes()


@pytest.mark.parametrize("text, scale, ms", [
    ("+130s", 1.0, 130_000.0), ("+130s", 0.01, 1300.0), ("-2m", 1.0, -120_000.0),
    ("500ms", 1.0, 500.0), ("130", 0.01, 1300.0), ("-0.5s", 0.1, -50.0),
])
def test_parse_skew(text, scale, ms):
    assert parse_skew(text, scale) == pytest.approx(ms)


def test_parse_skew_errors():
    with pytest.raises(SpecError, match=r"skew: expected a duration .* got 'soon' \(e.g. \+130s or -500ms\)"):
        parse_skew("soon")


def test_skew_specs():
    bump = skew_spec(["namesrv-1"], "+130s")
    assert (bump.clock, bump.targets, bump.offset) == ("bump", ["namesrv-1"], 130.0)
    drift = skew_spec(["namesrv-1"], "-200ppm", duration="30s")
    assert (drift.clock, drift.ppm, drift.duration) == ("drift", -200.0, 30.0)
    strobe = skew_spec(["broker-a-0"], "5s", period="1s")
    assert (strobe.clock, strobe.offset, strobe.period) == ("strobe", 5.0, 1.0)
    assert skew_spec(["namesrv-0"], "reset").clock == "reset"
    assert skew_spec(["namesrv-0"], "0").clock == "reset"
    with pytest.raises(SpecError, match="reset takes no --period"):
        skew_spec(["namesrv-0"], "reset", period="1s")
    with pytest.raises(SpecError, match="skew: expected a duration"):
        skew_spec(["namesrv-0"], "lots")


def test_partition_args():
    spec = parse_partition_args(["namesrv-0"], from_=["broker-a-0"], oneway=True)
    assert (spec.partition, spec.groups, spec.oneway) == ("groups", [["namesrv-0"], ["broker-a-0"]], True)
    iso = partition_spec(["namesrv-0"], duration="150s")
    assert (iso.partition, iso.targets, iso.duration) == ("isolate", ["namesrv-0"], 150.0)
    halves = partition_spec(mode="halves")
    assert (halves.partition, halves.targets) == ("halves", None)


@pytest.mark.parametrize("kwargs, message", [
    ({"targets": ["a"], "from_": ["b"], "mode": "halves"}, "cannot be combined with --mode halves"),
    ({"targets": [], "from_": ["b"]}, "--from needs the other side"),
    ({"targets": []}, "name the node\\(s\\) to isolate"),
    ({"targets": ["a"], "mode": "groups"}, "groups needs --from"),
    ({"targets": ["a"], "mode": "wedge"}, "--partition: Input should be 'isolate'"),
    ({"targets": ["a"], "duration": "forever"}, "--duration: expected a duration"),
])
def test_partition_arg_errors(kwargs, message):
    with pytest.raises(SpecError, match=message):
        partition_spec(**kwargs)


def test_link_and_process_specs():
    spec = link_spec(["pg-1-0"], to=["master"], delay="200ms", loss="5%", oneway=True)
    assert (spec.link, spec.to, spec.delay, spec.loss, spec.oneway) == (["pg-1-0"], ["master"], 0.2, 0.05, True)
    with pytest.raises(SpecError, match="--loss: expected a probability"):
        link_spec(["pg-1-0"], loss="lots")
    with pytest.raises(SpecError, match="at least one of delay"):
        link_spec(["pg-1-0"])
    assert process_spec("kill", ["broker-a-0"], restart_after="20s").restart_after == 20.0
    with pytest.raises(SpecError, match="unexpected duration"):
        process_spec("kill", ["broker-a-0"], duration="5s")
    with pytest.raises(SpecError, match="unknown process fault 'nuke'"):
        process_spec("nuke", ["a"])


def test_interactive_pause_with_duration_heals_only_itself():
    ops = FakeOps()
    injector = Injector(ops)
    injector.start(PauseFault("i1", ("namesrv-0",)))  # an earlier, untimed interactive fault
    plan = one_fault_plan(process_spec("pause", ["broker-b-0"], duration="10s"), injector.new_fault_id(),
                          NODES, random.Random(0), scale=0.01)
    assert [(s.at_ms, s.action, s.fault_id) for s in plan.steps] == [(0.0, "start", "i2"), (100.0, "stop", "i2")]
    result = run_plan_steps(plan, injector, ops.clock, ops.clock.advance)
    assert result.healed == [] and ops.state["broker-b-0"] == "running"
    assert ops.state["namesrv-0"] == "paused"  # not this plan's fault: left alone
    assert [f.fault_id for f in injector.active()] == ["i1"]


def test_interactive_plan_stopped_early_heals_its_own_fault_only():
    ops = FakeOps()
    injector = Injector(ops)
    injector.start(PauseFault("i1", ("namesrv-0",)))
    plan = one_fault_plan(skew_spec(["namesrv-1"], "+130s", duration="60s"), "i2", NODES, random.Random(0), 0.01)
    run = run_plan_steps(plan, injector, ops.clock, ops.clock.advance, should_stop=lambda: bool(injector.get("i2")))
    assert run.stopped_early and run.healed == ["i2"]
    assert ops.clocks["namesrv-1"] == ClockSetting() and ops.state["namesrv-0"] == "paused"
    assert ops.events[1]["params"]["offset_ms"] == 1300.0
