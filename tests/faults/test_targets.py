"""Target expressions against a two-namesrv, two-broker (one slave), three-client table."""

import random

import pytest

from rmqemu.emulator.launcher.nodes import NodeInfo, index_nodes, node_table
from rmqemu.errors import TargetError
from rmqemu.faults.targets import resolve_targets, selector_size

NODES = node_table(namesrvs=2, brokers={"broker-a": 1, "broker-b": 0},
                   producers={"pg-1": 1}, consumers={"cg-1": 2})
ALL = ["namesrv-0", "namesrv-1", "broker-a-0", "broker-a-1", "broker-b-0", "pg-1-0", "cg-1-0", "cg-1-1"]


def resolve(expr, seed=1):
    return resolve_targets(expr, NODES, random.Random(seed))


def test_node_table_names_and_roles():
    assert list(NODES) == ALL
    assert NODES["broker-a-1"] == NodeInfo("broker-a-1", "broker", "broker-a", 1)
    assert NODES["cg-1-1"] == NodeInfo("cg-1-1", "consumer", group="cg-1")


def test_duplicate_node_names_refused():
    with pytest.raises(ValueError, match="duplicate node name 'a'"):
        index_nodes([NodeInfo("a", "namesrv"), NodeInfo("a", "broker")])


@pytest.mark.parametrize("expr, expected", [
    ("broker-a-0", ["broker-a-0"]),
    ("namesrv", ["namesrv-0", "namesrv-1"]),
    ("broker", ["broker-a-0", "broker-a-1", "broker-b-0"]),
    ("master", ["broker-a-0", "broker-b-0"]),
    ("slave", ["broker-a-1"]),
    ("broker:broker-a", ["broker-a-0", "broker-a-1"]),
    ("producer", ["pg-1-0"]),
    ("consumer", ["cg-1-0", "cg-1-1"]),
    ("group:cg-1", ["cg-1-0", "cg-1-1"]),
    ("all", ALL),
    (["slave", "namesrv-1"], ["namesrv-1", "broker-a-1"]),  # node-table order, not term order
    ("namesrv,master", ["namesrv-0", "namesrv-1", "broker-a-0", "broker-b-0"]),
    (["broker", "!slave"], ["broker-a-0", "broker-b-0"]),
    (["!namesrv", "!consumer", "!producer"], ["broker-a-0", "broker-a-1", "broker-b-0"]),
    (["master", "master"], ["broker-a-0", "broker-b-0"]),
])
def test_names_roles_and_combinations(expr, expected):
    assert resolve(expr) == expected


def test_selectors_pick_the_right_number_from_the_right_pool():
    assert len(resolve("one")) == 1
    assert len(resolve("minority")) == 3  # (8 - 1) // 2
    assert len(resolve("majority")) == 5  # 8 // 2 + 1
    assert resolve("all:namesrv") == ["namesrv-0", "namesrv-1"]
    for seed in range(20):
        assert resolve("one:master", seed)[0] in ("broker-a-0", "broker-b-0")
        assert set(resolve("majority:broker", seed)) <= {"broker-a-0", "broker-a-1", "broker-b-0"}
        assert len(resolve("majority:broker", seed)) == 2
        assert resolve("one:broker:broker-a", seed)[0] in ("broker-a-0", "broker-a-1")


def test_selectors_follow_the_seed():
    picks = {tuple(resolve("minority", seed)) for seed in range(30)}
    assert len(picks) > 1  # the seed matters
    assert resolve("minority", 5) == resolve("minority", 5)
    expected = sorted(random.Random(5).sample(ALL, 3), key=ALL.index)
    assert resolve("minority", 5) == expected


def test_selector_sizes():
    assert [selector_size(s, 1) for s in ("one", "minority", "majority", "all")] == [1, 0, 1, 1]
    assert [selector_size(s, 2) for s in ("one", "minority", "majority", "all")] == [1, 0, 2, 2]
    assert [selector_size(s, 5) for s in ("one", "minority", "majority", "all")] == [1, 2, 3, 5]


def test_unknown_name_lists_known_nodes_roles_and_selectors():
    with pytest.raises(TargetError) as err:
        resolve("broker-c-0")
    message = str(err.value)
    assert "unknown target 'broker-c-0'" in message
    assert "namesrv-0, namesrv-1, broker-a-0" in message
    assert "master, slave" in message and "minority" in message


def test_unknown_broker_and_group_list_known_ones():
    with pytest.raises(TargetError, match=r"unknown broker 'broker-z'.*\(known: broker-a, broker-b\)"):
        resolve("broker:broker-z")
    with pytest.raises(TargetError, match=r"unknown client 'pg-9'.*\(known: cg-1, pg-1\)"):
        resolve("group:pg-9")
    with pytest.raises(TargetError, match="unknown role 'leader' in selector 'one:leader'"):
        resolve("one:leader")


def test_empty_results_are_errors():
    with pytest.raises(TargetError, match="selector 'minority:namesrv' picks no node out of 2"):
        resolve("minority:namesrv")
    with pytest.raises(TargetError, match="selects no node"):
        resolve(["slave", "!broker"])
    assert resolve_targets(["slave", "!broker"], NODES, random.Random(0), allow_empty=True) == []
    with pytest.raises(TargetError, match="no target given"):
        resolve([])
    with pytest.raises(TargetError, match="picks no node"):
        resolve_targets("one", {}, random.Random(0))
