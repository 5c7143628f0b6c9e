"""Partition maths, checked against hand-worked link lists."""

import random

import pytest

from rmqemu.errors import PartitionError
from rmqemu.faults.partition import (
    bridge,
    cut,
    halves,
    isolate,
    majorities_ring,
    majority,
    plan_partition,
)


def test_cut_two_groups_symmetric():
    assert cut([["a"], ["b", "c"]]) == [("a", "b"), ("a", "c"), ("b", "a"), ("c", "a")]


def test_cut_oneway_blocks_first_to_second_only():
    assert cut([["a"], ["b", "c"]], oneway=True) == [("a", "b"), ("a", "c")]


def test_cut_three_groups_oneway_blocks_earlier_to_later():
    assert cut([["a"], ["b"], ["c"]], oneway=True) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_cut_three_groups_symmetric_leaves_inside_links():
    links = cut([["a", "b"], ["c"], ["d"]])
    assert ("a", "b") not in links and ("b", "a") not in links
    assert len(links) == 2 * (2 * 1 + 2 * 1 + 1 * 1)


@pytest.mark.parametrize("groups, message", [
    ([["a"]], "at least two groups"),
    ([["a"], []], "empty"),
    ([["a", "b"], ["b"]], "listed twice: b"),
])
def test_cut_refuses_bad_groups(groups, message):
    with pytest.raises(PartitionError, match=message):
        cut(groups)


def test_isolate_one_node_of_three():
    assert isolate(["a", "b", "c"], ["b"]) == [("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")]


def test_isolate_oneway_target_cannot_send():
    assert isolate(["a", "b", "c"], ["b"], oneway=True) == [("b", "a"), ("b", "c")]


def test_isolate_two_targets_keep_their_own_link():
    assert isolate(["a", "b", "c"], ["a", "b"]) == [("a", "c"), ("b", "c"), ("c", "a"), ("c", "b")]


def test_isolate_two_node_cluster():
    assert isolate(["a", "b"], ["a"]) == [("a", "b"), ("b", "a")]


def test_isolate_single_node_has_nothing_to_cut_from():
    with pytest.raises(PartitionError, match="nothing left to cut a off from"):
        isolate(["a"], ["a"])


def test_isolate_unknown_target():
    with pytest.raises(PartitionError, match="z not among the nodes a, b"):
        isolate(["a", "b"], ["z"])


def test_halves_even_and_odd():
    assert halves(["a", "b", "c", "d"]) == cut([["a", "b"], ["c", "d"]])
    # odd: the first half is the smaller one (Jepsen's bisect)
    assert halves(["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "a"), ("c", "a")]


def test_halves_two_nodes_and_one_node():
    assert halves(["a", "b"], oneway=True) == [("a", "b")]
    with pytest.raises(PartitionError, match="halves: needs at least 2 nodes, got 1"):
        halves(["a"])


def test_majority_even_cluster_is_never_split_evenly():
    # 4 nodes: minority of 1, majority of 3 (halves would split 2/2)
    assert majority(["a", "b", "c", "d"]) == cut([["a"], ["b", "c", "d"]])
    assert majority(["a", "b", "c", "d", "e"]) == cut([["a", "b"], ["c", "d", "e"]])


def test_majority_oneway_minority_cannot_reach_majority():
    assert majority(["a", "b", "c"], oneway=True) == [("a", "b"), ("a", "c")]


def test_majority_two_nodes_refused():
    with pytest.raises(PartitionError, match="majority: needs at least 3 nodes"):
        majority(["a", "b"])


def test_majorities_ring_five_nodes_hand_worked():
    # ring a-b-c-d-e-a; each node keeps its two neighbours and loses the two across the ring
    assert majorities_ring(["a", "b", "c", "d", "e"]) == sorted([
        ("a", "c"), ("a", "d"), ("b", "d"), ("b", "e"), ("c", "e"),
        ("c", "a"), ("d", "a"), ("d", "b"), ("e", "b"), ("e", "c"),
    ])


def test_majorities_ring_four_nodes_cuts_opposites():
    assert majorities_ring(["a", "b", "c", "d"]) == [("a", "c"), ("b", "d"), ("c", "a"), ("d", "b")]


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8, 9])
def test_majorities_ring_every_node_sees_a_majority_and_no_two_majorities_agree(n):
    nodes = [f"n{i}" for i in range(n)]
    blocked = set(majorities_ring(nodes))
    views = {a: frozenset(b for b in nodes if (a, b) not in blocked) for a in nodes}
    assert all(len(v) >= n // 2 + 1 for v in views.values())
    assert all(a in v for a, v in views.items())
    assert blocked == {(b, a) for a, b in blocked}  # symmetric
    assert len(set(views.values())) == n  # overlapping rings, not one shared majority


def test_majorities_ring_too_small():
    with pytest.raises(PartitionError, match="needs at least 4 nodes, got 3"):
        majorities_ring(["a", "b", "c"])


def test_bridge_five_nodes():
    # sides [a, b] and [d, e], c bridges them
    assert bridge(["a", "b", "c", "d", "e"]) == cut([["a", "b"], ["d", "e"]])


def test_bridge_three_nodes_and_oneway():
    assert bridge(["a", "b", "c"]) == [("a", "c"), ("c", "a")]
    assert bridge(["a", "b", "c"], oneway=True) == [("a", "c")]


def test_bridge_two_nodes_refused():
    with pytest.raises(PartitionError, match="bridge: needs at least 3 nodes"):
        bridge(["a", "b"])


def test_duplicate_nodes_refused():
    with pytest.raises(PartitionError, match="listed twice: a"):
        halves(["a", "b", "a"])


def test_plan_partition_groups_and_isolate():
    p = plan_partition("groups", [], groups=[["namesrv-0"], ["broker-b-0"]], oneway=True)
    assert p.links == [("namesrv-0", "broker-b-0")] and p.groups == [["namesrv-0"], ["broker-b-0"]]
    p = plan_partition("isolate", ["x", "y", "z"], targets=["y"])
    assert p.groups == [["y"], ["x", "z"]]
    assert p.links == [("x", "y"), ("y", "x"), ("y", "z"), ("z", "y")]


def test_plan_partition_shuffles_with_the_rng_only():
    nodes = [f"n{i}" for i in range(6)]
    a = plan_partition("halves", nodes, rng=random.Random(7))
    b = plan_partition("halves", list(reversed(nodes)), rng=random.Random(7))
    assert a == b  # the input order does not matter, only the seed
    order = sorted(nodes)
    random.Random(7).shuffle(order)
    assert a.groups == [order[:3], order[3:]]
    assert plan_partition("halves", nodes).groups == [nodes[:3], nodes[3:]]  # no rng: sorted order


def test_plan_partition_bridge_and_ring_groups():
    p = plan_partition("bridge", ["c", "a", "b"])
    assert p.groups == [["a"], ["b"], ["c"]] and p.links == [("a", "c"), ("c", "a")]
    r = plan_partition("majorities-ring", ["d", "c", "b", "a"])
    assert r.groups == [["a", "b", "c", "d"]] and r.links == majorities_ring(["a", "b", "c", "d"])


def test_plan_partition_errors():
    with pytest.raises(PartitionError, match="unknown partition mode 'wedge'"):
        plan_partition("wedge", ["a", "b"])
    with pytest.raises(PartitionError, match="cannot be oneway"):
        plan_partition("majorities-ring", ["a", "b", "c", "d"], oneway=True)
    with pytest.raises(PartitionError, match="needs explicit groups"):
        plan_partition("groups", ["a", "b"])
