"""Role terms (leader:<broker>, followers:<broker>, leader) against a table with two DLedger
groups and a master/slave broker: what they name, what is refused, how they bind to a leader."""

import pytest

from rmqemu.errors import TargetError
from rmqemu.faults.roles import (
    bind_roles,
    check_role_terms,
    dledger_groups,
    groups_of,
    is_role_term,
    peers_touched,
    split_roles,
)
from rmqemu.faults.testing import dledger_nodes, sample_nodes

NODES = dledger_nodes({"broker-a": 3, "broker-c": 5}, classic={"broker-b": 1})
A = ["broker-a-n0", "broker-a-n1", "broker-a-n2"]
C = [f"broker-c-n{i}" for i in range(5)]


def test_dledger_groups_are_the_peers_only():
    assert dledger_groups(NODES) == {"broker-a": A, "broker-c": C}
    assert dledger_groups(sample_nodes()) == {}


@pytest.mark.parametrize("term, expected", [
    ("leader", True), ("leader:broker-a", True), ("followers:broker-a", True), ("!leader:broker-a", True),
    ("leaders", False), ("broker:broker-a", False), ("broker-a-n0", False), ("one:followers:broker-a", False),
])
def test_is_role_term(term, expected):
    assert is_role_term(term) is expected


def test_groups_of_each_term():
    assert groups_of("leader:broker-c", NODES) == ["broker-c"]
    assert groups_of("followers:broker-a", NODES) == ["broker-a"]
    assert groups_of("leader", NODES) == ["broker-a", "broker-c"]


@pytest.mark.parametrize("term, message", [
    ("leader:broker-x", "leader:broker-x: broker-x is not a DLedger group (DLedger groups: broker-a, broker-c)"),
    ("followers:broker-b", "broker-b is a master/slave broker, not a DLedger group (DLedger groups: broker-a, "),
    ("leader:", "(no name) is not a DLedger group"),
    ("!leader:broker-a", "cannot be excluded"),
    ("one:followers:broker-a", "cannot be drawn from"),
])
def test_bad_role_terms_name_the_dledger_groups(term, message):
    with pytest.raises(TargetError, match=rf"^{term}: .*") as err:
        groups_of(term, NODES)
    assert message in str(err.value)


def test_without_dledger_groups_every_role_term_is_refused():
    with pytest.raises(TargetError, match=r"^leader: .*this topology has no DLedger group"):
        groups_of("leader", sample_nodes())
    with pytest.raises(TargetError, match=r"broker-a is a master/slave broker.*this topology has no DLedger group"):
        groups_of("leader:broker-a", sample_nodes())


def test_role_terms_take_no_exclusions_but_plain_targets_still_do():
    with pytest.raises(TargetError, match=r"!namesrv-0: a target with a role term \(leader:broker-a\) takes no"):
        check_role_terms(["leader:broker-a", "!namesrv-0"], NODES)
    check_role_terms(["broker", "!slave"], NODES)  # no role term: nothing to say


def test_split_keeps_the_written_order_and_each_role_term_once():
    assert split_roles(["namesrv-0", "leader:broker-a", "one:master", "leader:broker-a", "leader"]) == (
        ["namesrv-0", "one:master"], ["leader:broker-a", "leader"])


def test_peers_touched_is_every_peer_a_term_could_hit():
    assert peers_touched(["leader:broker-a", "namesrv-0"], NODES) == set(A)
    assert peers_touched(["leader"], NODES) == set(A) | set(C)


def test_bind_leader_followers_and_every_leader():
    leaders = {"broker-a": "broker-a-n2", "broker-c": "broker-c-n0"}
    assert bind_roles(["leader:broker-a"], NODES, leaders) == (["broker-a-n2"], {})
    assert bind_roles(["followers:broker-a"], NODES, leaders) == (["broker-a-n0", "broker-a-n1"], {})
    assert bind_roles(["leader", "namesrv-1"], NODES, leaders) == (["namesrv-1", "broker-a-n2", "broker-c-n0"], {})


def test_a_group_without_a_leader_binds_nothing_and_is_named():
    names, refused = bind_roles(["leader", "followers:broker-c"], NODES, {"broker-a": "broker-a-n1", "broker-c": None})
    assert names == ["broker-a-n1"]
    assert refused == {"leader:broker-c": "broker-c has no DLedger leader now (an election is under way?)",
                       "followers:broker-c": "broker-c has no DLedger leader now (an election is under way?)"}


def test_a_leader_that_is_not_a_peer_of_the_group_binds_nothing():
    names, refused = bind_roles(["leader:broker-a"], NODES, {"broker-a": "broker-c-n0"})
    assert names == []
    assert refused == {"leader:broker-a": "the cluster names broker-c-n0 as broker-a's leader, not one of its peers"}
