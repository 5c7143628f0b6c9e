"""The group partition modes (leader-alone, leader-minority, leader-majority): hand-worked splits, and
properties over any group size, leader and order, at the maths and at the binding of a step."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.errors import PartitionError
from rmqemu.faults.binding import bind_step
from rmqemu.faults.partition import GROUP_MODES, leader_sides, plan_leader_partition, plan_partition
from rmqemu.faults.schedule import PlanStep
from rmqemu.faults.testing import dledger_nodes

P3 = ["n0", "n1", "n2"]
P5 = ["n0", "n1", "n2", "n3", "n4"]


@pytest.mark.parametrize("mode, peers, leader, expected", [
    ("leader-alone", P3, "n1", [["n1"], ["n0", "n2"]]),
    ("leader-alone", ["n0", "n1"], "n0", [["n0"], ["n1"]]),
    ("leader-minority", P5, "n2", [["n2", "n0"], ["n1", "n3", "n4"]]),  # the brief's 5 peers: leader + 1 vs 3
    ("leader-minority", P3, "n0", [["n0"], ["n1", "n2"]]),               # 3 peers: the leader alone
    ("leader-majority", P3, "n2", [["n2", "n0"], ["n1"]]),               # 3 peers: leader + 1 vs 1
    ("leader-majority", P5, "n4", [["n4", "n0", "n1"], ["n2", "n3"]]),
    ("leader-majority", ["n3", "n1", "n0", "n2"], "n1", [["n1", "n3", "n0"], ["n2"]]),  # filled in the order given
])
def test_hand_worked_sides(mode, peers, leader, expected):
    assert leader_sides(mode, peers, leader) == expected


def test_links_cut_both_ways_or_only_from_the_leaders_side():
    assert plan_leader_partition("leader-majority", P3, "n0").links == [
        ("n0", "n2"), ("n1", "n2"), ("n2", "n0"), ("n2", "n1")]
    assert plan_leader_partition("leader-alone", P3, "n1", oneway=True).links == [("n1", "n0"), ("n1", "n2")]


@pytest.mark.parametrize("mode, peers, leader, message", [
    ("leader-alone", ["n0"], "n0", "at least 2 peers, got 1"),
    ("leader-minority", ["n0", "n1"], "n0", "at least 3 peers, got 2"),
    ("leader-majority", ["n0", "n1"], "n0", "at least 3 peers, got 2"),
    ("leader-alone", P3, "n7", "the leader n7 is not one of the peers n0, n1, n2"),
    ("leader-alone", ["n0", "n0", "n1"], "n0", "listed twice: n0"),
    ("leaders", P3, "n0", "unknown group partition mode 'leaders'"),
])
def test_refusals(mode, peers, leader, message):
    with pytest.raises(PartitionError, match=message):
        leader_sides(mode, peers, leader)


def test_plan_partition_sends_group_modes_to_fire_time():
    with pytest.raises(PartitionError, match="leader-minority splits a DLedger group around its leader"):
        plan_partition("leader-minority", P5, rng=random.Random(1))


def expected_size(mode: str, n: int) -> int:
    """The brief's rule, written out again rather than read from GROUP_MODES."""
    return {"leader-alone": 1, "leader-minority": (n - 1) // 2, "leader-majority": n // 2 + 1}[mode]


def check_split(split, mode: str, peers: list[str], leader: str) -> None:
    """What any group split must give: two sides that are exactly the peers, the leader first on
    a side of the stated size, and every cross-side link cut both ways, nothing else."""
    leaders_side, rest = split(mode, peers, leader)
    assert sorted(leaders_side + rest) == sorted(peers)
    assert leaders_side[0] == leader and leader not in rest
    assert len(leaders_side) == expected_size(mode, len(peers)) and rest
    links = plan_leader_partition(mode, peers, leader).links if split is leader_sides else None
    if links is not None:
        assert set(links) == {(a, b) for x, y in ((leaders_side, rest), (rest, leaders_side)) for a in x for b in y}


@st.composite
def groups(draw):
    mode = draw(st.sampled_from(sorted(GROUP_MODES)))
    n = draw(st.integers(GROUP_MODES[mode][1], 9))
    peers = draw(st.permutations([f"p{i}" for i in range(n)]))
    return mode, list(peers), draw(st.sampled_from(peers))


@settings(max_examples=200, deadline=None)
@given(groups())
def test_any_group_splits_exactly_its_peers_around_the_leader(case):
    check_split(leader_sides, *case)


def test_the_property_catches_a_broken_rule():
    """A split one peer too small on the leader's side (``n // 2`` for the majority) must fail."""
    def broken(mode, peers, leader):
        followers = [p for p in peers if p != leader]
        k = len(peers) // 2 if mode == "leader-majority" else expected_size(mode, len(peers))
        return [[leader, *followers[:k - 1]], followers[k - 1:]]
    check_split(broken, "leader-minority", P5, "n1")  # the broken rule is right elsewhere
    with pytest.raises(AssertionError):
        check_split(broken, "leader-majority", P5, "n1")


@settings(max_examples=100, deadline=None)
@given(groups(), st.integers(0, 3), st.booleans())
def test_a_bound_group_partition_cuts_only_the_groups_peers(case, other_peers, oneway):
    """Through the binding of a plan step, in a table with namesrvs, clients, a master/slave
    broker and another DLedger group: only links between the group's peers are cut."""
    mode, peers, drawn_leader = case
    nodes = dledger_nodes({"broker-a": len(peers), "broker-c": other_peers}, classic={"broker-b": 1})
    names = [f"broker-a-n{p[1:]}" for p in peers]
    leader = f"broker-a-n{drawn_leader[1:]}"
    step = PlanStep(1.0, "start", "f1", "partition", tuple(sorted(names)),
                    {"mode": mode, "oneway": oneway, "links": [], "groups": [], "peers": names})
    bound = bind_step(step, nodes, {"broker-a": leader}, lambda _n: None)
    assert bound.step is not None and bound.refused == {}
    side, rest = bound.step.params["groups"]
    assert side[0] == leader and len(side) == expected_size(mode, len(names)) and sorted(side + rest) == sorted(names)
    cut = {tuple(link) for link in bound.step.params["links"]}
    assert cut == {(a, b) for a in side for b in rest} | (set() if oneway else {(b, a) for a in side for b in rest})
    assert bound.step.targets == step.targets  # the record names the group's peers


def test_a_group_partition_without_a_leader_is_not_bound():
    nodes = dledger_nodes()
    peers = ["broker-a-n0", "broker-a-n1", "broker-a-n2"]
    step = PlanStep(1.0, "start", "f1", "partition", tuple(peers),
                    {"mode": "leader-alone", "oneway": False, "links": [], "groups": [], "peers": peers})
    bound = bind_step(step, nodes, {"broker-a": None}, lambda _n: None)
    assert bound.step is None
    assert bound.why == ("nothing to hit: leader:broker-a: broker-a has no DLedger leader now "
                         "(an election is under way?)")
