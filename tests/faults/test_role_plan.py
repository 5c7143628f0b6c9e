"""Plans with role terms and group partition modes: symbolic steps with a note, seeded, refused
with the field's path (what validate says), and the overlaps a plan can and cannot check."""

import json

import pytest

from rmqemu.emulator.launcher.fault_spec import PARTITION_MODES, FaultSpec
from rmqemu.errors import PlanError, TopologyError
from rmqemu.faults.partition import GROUP_MODES
from rmqemu.faults.schedule import check_plan, plan_from_specs, read_plan, spec_problems, write_plan
from rmqemu.faults.testing import dledger_nodes, sample_nodes

NODES = dledger_nodes({"broker-a": 3, "broker-c": 5}, classic={"broker-b": 0})
A = ["broker-a-n0", "broker-a-n1", "broker-a-n2"]
#: the topology schema (emulator/launcher/fault_spec.py) must list the group modes for a spec to name them
needs_group_modes = pytest.mark.skipif(
    not set(GROUP_MODES) <= set(PARTITION_MODES),
    reason="fault_spec.PARTITION_MODES lacks leader-alone, leader-minority, leader-majority")


def plan(*entries, seed=1, nodes=NODES):
    return plan_from_specs([FaultSpec.model_validate(e) for e in entries], nodes, seed=seed, scale=0.01)


def problems(*entries, nodes=NODES):
    return spec_problems([FaultSpec.model_validate(e) for e in entries], nodes, seed=1, scale=0.01)


def test_role_terms_stay_symbolic_with_a_note():
    start, stop = plan({"at": 1, "kill": ["leader:broker-a", "namesrv-1"], "restart_after": 2}).steps
    assert start.targets == ("namesrv-1", "leader:broker-a") and start.params == {"restart_after_ms": 20.0}
    assert start.note == "leader:broker-a: resolved when the step fires, from the DLedger leader then"
    assert stop.targets == start.targets and stop.note == "ends what its start hit"


def test_node_terms_beside_a_role_term_draw_as_they_always_did():
    with_role = plan({"at": 1, "pause": ["one:namesrv", "leader:broker-c"]}, {"at": 1, "pause": "one:consumer"}, seed=5)
    alone = plan({"at": 1, "pause": "one:namesrv"}, {"at": 1, "pause": "one:consumer"}, seed=5)
    assert [s.targets[0] for s in with_role.steps] == [s.targets[0] for s in alone.steps]


def test_plan_json_shows_the_terms_and_round_trips(tmp_path):
    p = plan({"at": 1, "partition": "groups", "groups": [["leader:broker-a"], ["followers:broker-a"]], "duration": 1})
    step = json.loads(p.to_json())["steps"][0]
    assert step["targets"] == ["leader:broker-a", "followers:broker-a"] and step["params"]["links"] == []
    assert step["params"]["groups"] == [["leader:broker-a"], ["followers:broker-a"]]
    assert step["note"].startswith("leader:broker-a, followers:broker-a: resolved when the step fires")
    write_plan(p, tmp_path / "plan.json")
    assert read_plan(tmp_path) == p


def test_a_plan_without_role_terms_has_no_note_key():
    p = plan_from_specs([FaultSpec.model_validate({"at": 1, "kill": "broker-a-0"})], sample_nodes(), seed=1, scale=1)
    assert "note" not in p.to_json()


@pytest.mark.parametrize("entry, message", [
    ({"at": 1, "kill": "leader:broker-x"},
     "faults[0].kill: leader:broker-x: broker-x is not a DLedger group (DLedger groups: broker-a, broker-c)"),
    ({"at": 1, "pause": ["namesrv-0", "followers:broker-b"]},
     "faults[0].pause: followers:broker-b: broker-b is a master/slave broker, not a DLedger group (DLedger groups: "),
    ({"at": 1, "link": "pg-1-0", "to": "leader:nope", "delay": 1}, "faults[0].to: leader:nope: nope is not a DLedger"),
    ({"at": 1, "clock": "bump", "targets": "leader:", "offset": 1}, "faults[0].targets: leader:: (no name) is not"),
    ({"at": 1, "partition": "groups", "groups": [["namesrv-0"], ["leader:broker-z"]]},
     "faults[0].groups[1]: leader:broker-z: broker-z is not a DLedger group"),
    ({"at": 1, "kill": ["leader:broker-a", "!namesrv-0"]}, "faults[0].kill: !namesrv-0: a target with a role term"),
    ({"at": 1, "kill": "majority:followers:broker-c"}, "faults[0].kill: majority:followers:broker-c: a role term is"),
    ({"at": 1, "partition": "halves", "targets": ["leader"]},
     "faults[0].targets: leader: halves splits its targets when the plan is built, and a role term is only known"),
])
def test_bad_role_terms_are_named_by_their_field(entry, message):
    assert [p[:len(message)] for p in problems(entry)] == [message]


def test_validate_of_a_topology_without_dledger_groups_names_the_field():
    from rmqemu.emulator.launcher.topology_load import parse_topology
    from rmqemu.faults.launch_glue import check_topology_faults

    topo = parse_topology({"name": "t", "brokers": [{"name": "broker-a"}], "duration": "60s",
                           "faults": [{"at": 5, "kill": "broker-a-0"}, {"at": 10, "kill": "leader:broker-a"}]})
    with pytest.raises(TopologyError) as err:
        check_topology_faults(topo)
    assert err.value.problems == ["faults[1].kill: leader:broker-a: broker-a is a master/slave broker, not a DLedger "
                                  "group (this topology has no DLedger group)"]


@pytest.mark.parametrize("groups, ok", [
    ([["leader:broker-a"], ["followers:broker-a"]], True),
    ([["leader"], ["followers:broker-a", "followers:broker-c"]], True),
    ([["leader:broker-a", "namesrv-0"], ["broker-c-n1"]], True),
    ([["leader:broker-a"], ["broker-a-n0"]], False),
    ([["leader"], ["leader:broker-c"]], False),
    ([["followers:broker-a"], ["followers:broker-a"]], False),
])
def test_partition_groups_that_may_share_a_peer_when_they_fire_are_refused(groups, ok):
    found = problems({"at": 1, "partition": "groups", "groups": groups})
    assert found == [] if ok else (len(found) == 1 and "may both hold broker-" in found[0])


@pytest.mark.parametrize("entries, clash", [
    ([{"at": 1, "kill": "leader:broker-a", "restart_after": 5}, {"at": 2, "pause": "broker-a-n0", "duration": 1}],
     "broker-a-n0 may be the peer f1 (kill leader:broker-a) hits"),
    ([{"at": 1, "pause": "broker-a-n2"}, {"at": 9, "kill": "followers:broker-a"}],
     "broker-a-n2 may be the peer f2 (kill followers:broker-a) hits, and f1 (pause from 10 ms, faults[0]) holds it "
     "and never ends"),
    ([{"at": 1, "clock": "bump", "targets": "leader", "offset": 1, "duration": 5},
      {"at": 2, "clock": "drift", "targets": "broker-c-n4", "ppm": 5}], "broker-c-n4 may be the peer f1"),
])
def test_a_named_peer_cannot_overlap_a_role_term_of_its_group(entries, clash):
    with pytest.raises(PlanError, match="a fault on a named peer cannot overlap one on its DLedger group") as err:
        plan(*entries)
    assert clash in str(err.value)


@pytest.mark.parametrize("entries", [
    [{"at": 1, "kill": "leader:broker-a"}, {"at": 2, "kill": "leader:broker-a"}],  # kill the new leader too
    [{"at": 1, "pause": "leader:broker-a", "duration": 9}, {"at": 2, "stop": "followers:broker-a"}],
    [{"at": 1, "kill": "leader:broker-a", "restart_after": 5}, {"at": 6, "pause": "broker-a-n0"}],  # after it
    [{"at": 1, "kill": "leader:broker-a"}, {"at": 2, "pause": "broker-c-n0"}],  # another group
    [{"at": 1, "kill": "leader:broker-a"}, {"at": 2, "clock": "bump", "targets": "broker-a-n0", "offset": 1}],
])
def test_overlaps_the_plan_leaves_to_when_they_fire(entries):
    assert len(plan(*entries).steps) >= 2


def test_a_plan_for_another_topology_names_the_missing_group():
    p = plan({"at": 1, "kill": "leader:broker-c"})
    with pytest.raises(PlanError, match=r"leader:broker-c: broker-c is not a DLedger group \(DLedger groups: broker-a\)"
                                        r" \(is this plan for another topology\?\)"):
        check_plan(p, dledger_nodes({"broker-a": 3}))


@needs_group_modes
def test_a_group_mode_keeps_the_peers_in_a_seeded_order():
    entry = {"at": 1, "partition": "leader-minority", "targets": "broker:broker-c", "duration": 2}
    start, stop = plan(entry, seed=4).steps
    assert start.targets == tuple(f"broker-c-n{i}" for i in range(5))
    assert start.params == {"mode": "leader-minority", "oneway": False, "links": [], "groups": [],
                            "peers": start.params["peers"]}
    assert sorted(start.params["peers"]) == list(start.targets)
    assert start.note.startswith("leader-minority of broker-c: resolved when the step fires")
    assert plan(entry, seed=4).steps[0].params == start.params
    assert len({tuple(plan(entry, seed=s).steps[0].params["peers"]) for s in range(10)}) > 1


@needs_group_modes
@pytest.mark.parametrize("entry, message", [
    ({"at": 1, "partition": "leader-alone"},
     "faults[0].targets: leader-alone splits one DLedger group around its leader: give one DLedger group's peers, as "
     "broker:<name> (DLedger groups: broker-a, broker-c)"),
    ({"at": 1, "partition": "leader-majority", "targets": "broker:broker-b"},
     "faults[0].targets: broker:broker-b is not the peers of one DLedger group"),
    ({"at": 1, "partition": "leader-alone", "targets": "one:broker:broker-a"},
     "faults[0].targets: one:broker:broker-a: leader-alone takes no selector or role term"),
    ({"at": 1, "partition": "leader-alone", "targets": ["broker-a-n0", "broker-a-n1"]},
     "faults[0].targets: broker-a-n0,broker-a-n1 is not the peers of one DLedger group"),
])
def test_a_group_mode_needs_one_whole_group(entry, message):
    assert [p[:len(message)] for p in problems(entry)] == [message]


@needs_group_modes
def test_a_group_mode_on_a_group_too_small_is_refused():
    found = problems({"at": 1, "partition": "leader-majority", "targets": ["broker-a-n0", "broker-a-n1"]},
                     nodes=dledger_nodes({"broker-a": 2}))
    assert len(found) == 1 and "needs a DLedger group of at least 3 peers; broker-a has 2" in found[0]
