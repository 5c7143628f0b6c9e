"""Plans from specs and from the nemesis, plan.json, and the interpreter on a fake clock."""

import json

import pytest

from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.emulator.node.clock import FakeClock
from rmqemu.errors import PlanError, PlanFailed
from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan, run_plan_steps
from rmqemu.faults.nemesis import parse_nemesis_kinds, random_plan
from rmqemu.faults.schedule import Plan, PlanStep, check_plan, plan_from_specs, read_plan, write_plan
from rmqemu.faults.testing import FakeOps, sample_nodes

NODES = sample_nodes()
DESIGN_FAULTS = [
    {"at": "5s", "kill": "broker-a-0", "restart_after": "20s"},
    {"at": "30s", "partition": "isolate", "targets": ["namesrv-0"], "duration": "150s"},
    {"at": "60s", "clock": "bump", "targets": ["namesrv-1"], "offset": "130s"},
    {"at": "90s", "partition": "groups", "groups": [["namesrv-0"], ["broker-b-0"]], "oneway": True, "duration": "60s"},
]


def specs(entries):
    return [FaultSpec.model_validate(e) for e in entries]


def design_plan():
    return plan_from_specs(specs(DESIGN_FAULTS), NODES, seed=42, scale=0.01, duration_s=240)


def test_design_faults_resolve_to_wall_ms_steps():
    plan = design_plan()
    assert [(s.at_ms, s.action, s.fault_id, s.kind, s.targets) for s in plan.steps] == [
        (50.0, "start", "f1", "kill", ("broker-a-0",)),
        (250.0, "stop", "f1", "kill", ("broker-a-0",)),
        (300.0, "start", "f2", "partition", ("namesrv-0",)),  # the isolated node; links cover the rest
        (600.0, "start", "f3", "clock", ("namesrv-1",)),
        (900.0, "start", "f4", "partition", ("namesrv-0", "broker-b-0")),
        (1500.0, "stop", "f4", "partition", ("namesrv-0", "broker-b-0")),
        (1800.0, "stop", "f2", "partition", ("namesrv-0",)),
    ]
    assert plan.duration_ms == 2400.0
    assert plan.steps[0].params == {"restart_after_ms": 200.0}
    iso = plan.steps[2].params
    assert iso["groups"][0] == ["namesrv-0"] and len(iso["links"]) == 2 * 7
    assert plan.steps[3].params == {"mode": "bump", "offset_ms": 1300.0, "strobe_delta_ms": 0.0,
                                    "strobe_period_ms": 0.0, "drift_ppm": 0.0}
    assert plan.steps[4].params["links"] == [["namesrv-0", "broker-b-0"]]


def test_link_spec_links_and_params():
    plan = plan_from_specs(specs([
        {"at": 1, "link": "pg-1-0", "to": "master", "delay": "200ms", "jitter": "50ms", "loss": "5%"},
        {"at": 1, "link": "namesrv-0", "to": "broker-b-0", "oneway": True, "duplicate": 0.5},
        {"at": 1, "link": "broker-b-0", "loss": 1},
    ]), NODES, seed=1, scale=0.5)
    a, b, c = (s.params for s in plan.steps)
    assert a == {"links": [["broker-a-0", "pg-1-0"], ["broker-b-0", "pg-1-0"], ["pg-1-0", "broker-a-0"],
                           ["pg-1-0", "broker-b-0"]],
                 "delay_ms": 100.0, "jitter_ms": 25.0, "loss": 0.05, "duplicate": 0.0}
    assert b["links"] == [["namesrv-0", "broker-b-0"]]
    assert len(c["links"]) == 2 * 7  # every link of broker-b-0, both ways


def test_partition_split_modes_use_the_seeded_rng():
    entries = [{"at": 1, "partition": "halves", "targets": "broker,namesrv"}]
    one = plan_from_specs(specs(entries), NODES, seed=3, scale=1).steps[0].params
    assert one == plan_from_specs(specs(entries), NODES, seed=3, scale=1).steps[0].params
    assert sorted(n for g in one["groups"] for n in g) == sorted(
        ["namesrv-0", "namesrv-1", "broker-a-0", "broker-a-1", "broker-b-0"])
    assert [len(g) for g in one["groups"]] == [2, 3]
    seen = {json.dumps(plan_from_specs(specs(entries), NODES, seed=s, scale=1).steps[0].params["groups"])
            for s in range(10)}
    assert len(seen) > 1


@pytest.mark.parametrize("entries, message", [
    ([{"at": 5, "kill": "broker-a-0", "restart_after": 20}, {"at": 10, "pause": "broker:broker-a"}],
     r"faults\[1\]: start f2 \(pause broker-a-0,broker-a-1\) at 10000 ms: broker-a-0 is held by f1 "
     r"\(kill from 5000 ms, faults\[0\]\) until it stops"),
    ([{"at": 5, "kill": "broker-a-0"}, {"at": 100, "stop": "broker-a-0"}], "held by f1 .* and never ends"),
    ([{"at": 1, "clock": "bump", "targets": "namesrv-0", "offset": 1},
      {"at": 2, "clock": "drift", "targets": "namesrv", "ppm": 5}], "namesrv-0 is held by f1 \\(clock"),
    ([{"at": 1, "kill": "broker-c-0"}], r"faults\[0\] \(kill broker-c-0 at 1s\): unknown target 'broker-c-0'"),
    ([{"at": 1, "partition": "majorities-ring", "targets": "namesrv"}], "needs at least 4 nodes, got 2"),
    ([{"at": 300, "pause": "pg-1-0"}], r"starts after the end of the run \(240s\)"),
    ([{"at": 1, "link": "pg-1-0", "to": "pg-1-0", "delay": 1}], "covers no link"),
])
def test_plan_errors(entries, message):
    with pytest.raises(PlanError, match=message):
        plan_from_specs(specs(entries), NODES, seed=1, scale=1, duration_s=240)


def test_back_to_back_and_reset_are_not_overlaps():
    plan = plan_from_specs(specs([
        {"at": 5, "pause": "broker-a-0", "duration": 5},
        {"at": 10, "kill": "broker-a-0"},  # starts when the pause ends
        {"at": 1, "clock": "bump", "targets": "namesrv-0", "offset": 1},
        {"at": 2, "clock": "reset", "targets": "namesrv-0"},
        {"at": 3, "clock": "drift", "targets": "namesrv-0", "ppm": 5},
    ]), NODES, seed=1, scale=1)
    assert [(s.action, s.fault_id) for s in plan.steps if s.at_ms == 10_000] == [("stop", "f1"), ("start", "f2")]


def test_plan_json_round_trip_is_byte_stable(tmp_path):
    plan = design_plan()
    path = write_plan(plan, tmp_path / "plan.json")
    text = path.read_text()
    assert text == plan.to_json() and text.endswith("\n")
    assert read_plan(tmp_path) == plan  # a run directory means DIR/plan.json
    assert json.loads(text)["steps"][0]["targets"] == ["broker-a-0"]
    assert write_plan(read_plan(path), tmp_path / "again.json").read_text() == text


def test_read_plan_errors(tmp_path):
    with pytest.raises(PlanError, match="no fault plan at"):
        read_plan(tmp_path)
    (tmp_path / "plan.json").write_text("{not json")
    with pytest.raises(PlanError, match="is not valid JSON"):
        read_plan(tmp_path)
    (tmp_path / "plan.json").write_text(json.dumps({"version": 9}))
    with pytest.raises(PlanError, match="plan version 9 is not supported"):
        read_plan(tmp_path)
    (tmp_path / "plan.json").write_text(json.dumps({"version": 1, "seed": 1, "scale": 1}))
    with pytest.raises(PlanError, match="malformed plan: KeyError\\('steps'\\)"):
        read_plan(tmp_path)


def test_check_plan_against_another_topology():
    with pytest.raises(PlanError, match="unknown node\\(s\\) broker-a-1 \\(is this plan for another topology"):
        check_plan(design_plan(), {k: v for k, v in NODES.items() if k != "broker-a-1"})
    stray = Plan(1, 1.0, (PlanStep(0, "stop", "f1", "pause", ("pg-1-0",)),))
    with pytest.raises(PlanError, match="stops a fault that has not started"):
        check_plan(stray)


# -- nemesis -------------------------------------------------------------------------------

def test_nemesis_same_seed_same_bytes_different_seed_different_plan():
    def make(seed: int) -> Plan:
        return random_plan("kill,pause,partition,clock", "30s", "600s", NODES, seed, 0.01)

    assert make(11).to_json() == make(11).to_json()
    assert make(11).to_json() != make(12).to_json()


def test_nemesis_rhythm_and_no_overlap():
    plan = random_plan(["pause", "partition", "clock", "link", "kill", "stop"], 30, "300s", NODES, 5, 0.01)
    starts = [s.at_ms for s in plan.steps if s.action == "start"]
    stops = [s.at_ms for s in plan.steps if s.action == "stop"]
    assert starts == [300.0, 900.0, 1500.0, 2100.0] and stops == [600.0, 1200.0, 1800.0, 2400.0]
    assert [s.fault_id for s in plan.steps] == ["n1", "n1", "n2", "n2", "n3", "n3", "n4", "n4"]
    assert plan.origin == {"source": "nemesis", "kinds": ["pause", "partition", "clock", "link", "kill", "stop"],
                           "interval_s": 30.0}
    assert plan.duration_ms == 3000.0


def test_nemesis_covers_every_kind_and_partition_mode_over_seeds():
    kinds, modes = set(), set()
    for seed in range(40):
        for step in random_plan("kill,stop,pause,partition,link,clock", 10, 200, NODES, seed, 1).steps:
            kinds.add(step.kind)
            if step.kind in ("partition", "clock") and step.action == "start":
                modes.add(step.params["mode"])
    assert kinds == {"kill", "stop", "pause", "partition", "link", "clock"}
    assert modes == {"isolate", "halves", "majority", "bridge", "majorities-ring", "bump", "strobe", "drift"}


def test_nemesis_errors():
    with pytest.raises(PlanError, match="unknown nemesis kind\\(s\\) nuke.*kill, stop, pause"):
        parse_nemesis_kinds("kill,nuke")
    assert parse_nemesis_kinds(" kill, pause ,kill") == ["kill", "pause"]
    with pytest.raises(PlanError, match="no room for a fault"):
        random_plan("kill", "30s", "60s", NODES, 1, 1)
    with pytest.raises(PlanError, match="nemesis: expected a duration"):
        random_plan("kill", "soon", "60s", NODES, 1, 1)


# -- interpreter ---------------------------------------------------------------------------

class FakeTime:
    """Monotonic clock + sleep that only advance when slept on; logs every sleep."""

    def __init__(self, clock: FakeClock):
        self.clock, self.sleeps = clock, []

    def sleep(self, ms):
        self.sleeps.append(ms)
        self.clock.advance(ms)


def run(plan, ops=None, **kwargs):
    ops = ops or FakeOps()
    fake = FakeTime(ops.clock)
    result = run_plan(plan, Injector(ops), ops.clock, fake.sleep, **kwargs)
    return ops, fake, result


def test_interpreter_runs_steps_at_their_times_and_heals():
    ops, fake, result = run(design_plan(), poll_ms=1000.0)
    t0 = 1_000_000.0
    starts = {(e["fault_id"], e["kind"]): e["ts"] - t0 for e in ops.events}
    assert starts == {("f1", "fault.start"): 50.0, ("f1", "fault.end"): 250.0,
                      ("f1.restart", "fault.start"): 250.0, ("f1.restart", "fault.end"): 250.0,
                      ("f2", "fault.start"): 300.0, ("f3", "fault.start"): 600.0,
                      ("f4", "fault.start"): 900.0, ("f4", "fault.end"): 1500.0,
                      ("f2", "fault.end"): 1800.0, ("f3", "fault.end"): 2400.0}
    assert [e.get("reason") for e in ops.events if e["fault_id"] == "f3"] == [None, "heal_all"]
    assert len(result.done) == 7 and result.healed == ["f3"] and not result.stopped_early
    assert ops.links == {} and ops.state["broker-a-0"] == "running"
    assert sum(fake.sleeps) == 2400.0 and max(fake.sleeps) == 600.0


def test_launch_entry_returns_after_the_last_step_and_leaves_unended_faults_active():
    """``run_plan_steps`` (what launch runs): no wait for the plan's 2400 ms, no heal at the end;
    the launcher pumps until the run's end and heals everything itself."""
    ops = FakeOps()
    fake = FakeTime(ops.clock)
    injector = Injector(ops)
    result = run_plan_steps(design_plan(), injector, ops.clock, fake.sleep)
    assert len(result.done) == 7 and result.healed == [] and not result.stopped_early
    assert sum(fake.sleeps) == 1800.0 and max(fake.sleeps) == 100.0  # the last step; polls of 100 ms
    assert [f.fault_id for f in injector.active()] == ["f3"] and ops.clocks["namesrv-1"].offset_ms == 1300.0


def test_interpreter_polls_should_stop_and_heals_when_stopped():
    ops = FakeOps()
    fake = FakeTime(ops.clock)
    stop_at = ops.clock() + 400
    result = run_plan(design_plan(), Injector(ops), ops.clock, fake.sleep,
                      should_stop=lambda: ops.clock() >= stop_at, poll_ms=100.0)
    assert result.stopped_early and result.healed == ["f2"]
    assert max(fake.sleeps) == 100.0 and ops.clock() == stop_at
    assert ops.links == {}


def test_interpreter_heals_on_ctrl_c():
    ops = FakeOps()
    def sleep(ms):
        ops.clock.advance(ms)
        if ops.clock() - 1_000_000.0 > 700:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_plan(design_plan(), Injector(ops), ops.clock, sleep)
    ends = {e["fault_id"] for e in ops.events if e["kind"] == "fault.end"}
    assert ends == {"f1", "f1.restart", "f2", "f3"} and ops.links == {}
    assert all(s.offset_ms == 0 for s in ops.clocks.values())


def test_failed_step_raises_with_the_seed_after_healing():
    ops = FakeOps(spawned=set(NODES) - {"broker-a-0"})
    with pytest.raises(PlanFailed, match=r"step 0 \(faults\[0\]: start f1 .*\[seed 42; replay with") as err:
        run(design_plan(), ops)
    assert err.value.seed == 42 and err.value.step == {"index": 0, "fault_id": "f1"}


def test_continue_on_error_records_and_goes_on():
    ops = FakeOps(spawned=set(NODES) - {"broker-a-0"})
    ops, _, result = run(design_plan(), ops, continue_on_error=True)
    errors = [e for e in ops.events if e["kind"] == "fault.error"]
    assert [e["fault_id"] for e in errors] == ["f1"]
    assert any("not active any more" in s for s in result.skipped)  # the restart of the failed kill
    assert ("fault.end", "f4", "partition") in ops.kinds()


def test_zero_restart_after_restarts_right_after_the_kill():
    plan = plan_from_specs(specs([{"at": 5, "pause": "broker-a-0", "duration": 5},
                                  {"at": 10, "kill": "broker-a-0", "restart_after": 0}]), NODES, seed=1, scale=1)
    assert [(s.at_ms, s.action, s.fault_id) for s in plan.steps] == [
        (5000.0, "start", "f1"), (10000.0, "stop", "f1"), (10000.0, "start", "f2"), (10000.0, "stop", "f2")]


def test_a_reset_frees_every_node_of_the_clock_faults_it_ends_as_at_run_time():
    """`clock: reset` on one node ends the whole clock fault holding it (the injector stops that
    fault), so its other targets are free for a later clock fault too."""
    plan = plan_from_specs([FaultSpec.model_validate(e) for e in (
        {"at": 1, "clock": "bump", "targets": ["namesrv-0", "namesrv-1"], "offset": "130s"},
        {"at": 2, "clock": "reset", "targets": ["namesrv-0"]},
        {"at": 3, "clock": "drift", "targets": ["namesrv-1"], "ppm": 500})], sample_nodes(), seed=1, scale=0.01)
    assert [s.kind for s in plan.steps] == ["clock", "clock", "clock"]
