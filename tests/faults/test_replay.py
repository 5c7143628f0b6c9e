"""End to end on FakeOps: a nemesis plan written, run, replayed from plan.json; the records."""

from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan
from rmqemu.faults.nemesis import random_plan
from rmqemu.faults.schedule import read_plan, write_plan
from rmqemu.faults.testing import FakeOps, sample_nodes

NODES = sample_nodes()


def run(plan):
    ops = FakeOps(ack_ms=1.0)
    run_plan(plan, Injector(ops), ops.clock, ops.clock.advance, poll_ms=50.0)
    return ops


def without_ts(events):
    return [{k: v for k, v in e.items() if k != "ts"} for e in events]


def test_nemesis_run_replays_identically_from_plan_json(tmp_path):
    plan = random_plan("kill,stop,pause,partition,link,clock", "20s", "400s", NODES, seed=2024, scale=0.01)
    write_plan(plan, tmp_path / "plan.json")
    first = run(plan)
    again = run(read_plan(tmp_path))
    assert without_ts(first.events) == without_ts(again.events)
    assert first.calls == again.calls


def test_every_fault_is_recorded_as_design_section_6_says_and_ends():
    plan = random_plan("kill,stop,pause,partition,link,clock", "20s", "400s", NODES, seed=7, scale=0.01)
    ops = run(plan)
    starts = [e for e in ops.events if e["kind"] == "fault.start"]
    ends = [e for e in ops.events if e["kind"] == "fault.end"]
    assert {e["fault_id"] for e in starts} == {e["fault_id"] for e in ends}
    assert len(starts) == len(ends) >= 9
    for e in ops.events:
        assert set(e) >= {"ts", "node", "kind", "fault_id", "fault", "targets", "params"}
        assert isinstance(e["ts"], float) and e["targets"]
    for e in starts:
        if e["fault"] == "partition":
            assert e["params"]["links"] and all(len(link) == 2 for link in e["params"]["links"])
        if e["fault"] == "clock":
            assert "offset_ms" in e["params"]
    assert all(s == "running" for s in ops.state.values())  # every kill/stop restarted, pauses resumed
    assert ops.links == {} and all(c.offset_ms == 0 and c.drift_ppm == 0 for c in ops.clocks.values())
    times = [e["ts"] for e in ops.events]
    assert times == sorted(times)
