"""The topology's ``dledger:`` block (docs/design.md §5): validation, the node plan, the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.launcher.topology_load import parse_topology, plan_nodes
from rmqemu.emulator.roles.common.broker_config import broker_configs_from_dict
from rmqemu.errors import TopologyError

QUICKSTART = Path(__file__).resolve().parents[2] / "topologies" / "dledger-quickstart.yaml"


def topo(*brokers: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "t", "brokers": list(brokers), **top}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(TopologyError) as info:
        parse_topology(data, "t.yaml")
    return info.value.problems


def brokers_of(data: dict[str, Any]) -> list[tuple[str, str | None, int | None, str | None]]:
    return [(n.name, n.broker, n.broker_id, n.peer) for n in plan_nodes(parse_topology(data, "t.yaml"))
            if n.role == "broker"]


def test_a_group_is_one_node_per_peer_beside_a_classic_group() -> None:
    got = brokers_of(topo({"name": "broker-a", "dledger": {"peers": 3, "preferred_leader": "n1"}},
                          {"name": "broker-b", "slaves": 1}))
    assert got == [("broker-a-n0", "broker-a", None, "n0"), ("broker-a-n1", "broker-a", None, "n1"),
                   ("broker-a-n2", "broker-a", None, "n2"),
                   ("broker-b-0", "broker-b", 0, None), ("broker-b-1", "broker-b", 1, None)]


def test_an_empty_block_or_true_is_three_peers_and_false_is_a_classic_group() -> None:
    three = [("broker-a-n0", "broker-a", None, "n0"), ("broker-a-n1", "broker-a", None, "n1"),
             ("broker-a-n2", "broker-a", None, "n2")]
    assert brokers_of(topo({"name": "broker-a", "dledger": {}})) == three
    assert brokers_of(topo({"name": "broker-a", "dledger": True})) == three
    assert brokers_of(topo({"name": "broker-a", "dledger": False})) == [("broker-a-0", "broker-a", 0, None)]
    assert len(brokers_of(topo({"name": "broker-a", "dledger": {"peers": 9}}))) == 9


def test_each_peer_gets_rocketmq_dledger_keys_with_node_names_for_addresses() -> None:
    nodes = plan_nodes(parse_topology(topo({"name": "broker-a", "cluster": "C1", "defaultTopicQueueNums": 4,
                                            "dledger": {"preferred_leader": "n2"}}), "t.yaml"))
    peer = next(n for n in nodes if n.name == "broker-a-n1")
    assert peer.config == {
        "defaultTopicQueueNums": 4, "brokerName": "broker-a", "brokerClusterName": "C1",
        "enableDLegerCommitLog": True, "dLegerGroup": "broker-a",
        "dLegerPeers": "n0-broker-a-n0;n1-broker-a-n1;n2-broker-a-n2", "dLegerSelfId": "n1",
        "preferredLeaderId": "n2"}
    assert (peer.cluster, peer.broker_id) == ("C1", None)  # the broker decides its brokerId
    store = broker_configs_from_dict(peer.config).store  # the keys are the broker's own
    assert (store.enableDLegerCommitLog, store.dLegerSelfId, store.preferredLeaderId) == (True, "n1", "n2")
    plain = plan_nodes(parse_topology(topo({"name": "broker-a", "dledger": {"peers": 2}}), "t.yaml"))[1]
    assert "preferredLeaderId" not in plain.config and plain.config["dLegerPeers"] == "n0-broker-a-n0;n1-broker-a-n1"


def test_a_bad_group_is_refused_with_its_path_and_what_was_expected() -> None:
    assert problems(topo({"name": "broker-a", "dledger": {"peers": 1}})) == [
        "brokers[0].dledger.peers: a DLedger group needs at least 2 peers, got 1"]
    assert problems(topo({"name": "broker-a", "dledger": {"peers": 10}})) == [
        "brokers[0].dledger.peers: a DLedger group has at most 9 peers (one node process each), got 10"]
    assert problems(topo({"name": "broker-a"}, {"name": "broker-b", "dledger": {"preferred_leader": "n3"}})) == [
        "brokers[1].dledger.preferred_leader: 'n3' is not a peer of this group: its peers are n0, n1, n2"]
    assert problems(topo({"name": "broker-a", "slaves": 1, "dledger": {}})) == [
        "brokers[0].slaves: a DLedger group has no slaves: its peers replicate (remove `slaves: 1` or the "
        "`dledger:` block)"]
    assert problems(topo({"name": "broker-a", "dledger": {"peer": 3}})) == [
        "brokers[0].dledger.peer: unknown key (did you mean peers?)"]
    assert problems(topo({"name": "broker-a", "dledger": 3})) == [
        "brokers[0].dledger: expected true, false or a mapping {peers: N, preferred_leader: nX}, got '3'"]


def test_a_group_with_slaves_and_a_bad_count_gets_both_problems_in_one_pass() -> None:
    assert problems(topo({"name": "broker-a", "slaves": 2, "dledger": {"peers": 1}})) == [
        "brokers[0].dledger.peers: a DLedger group needs at least 2 peers, got 1",
        "brokers[0].slaves: a DLedger group has no slaves: its peers replicate (remove `slaves: 2` or the "
        "`dledger:` block)"]


def test_the_keys_the_block_sets_are_refused_by_hand_on_any_broker_entry() -> None:
    got = problems(topo({"name": "broker-a", "enableDLegerCommitLog": True, "dLegerGroup": "g"},
                        {"name": "broker-b", "dledger": {}, "dLegerPeers": "n0-x", "dLegerSelfId": "n0",
                         "preferredLeaderId": "n1"}))
    assert got == [
        "brokers[0].enableDLegerCommitLog: not settable here, the entry's `dledger:` block turns it on",
        "brokers[0].dLegerGroup: not settable here, the entry's `dledger:` block sets it to the entry's `name`",
        "brokers[1].dLegerPeers: not settable here, the entry's `dledger: {peers: N}` sets it (n0 .. n<N-1>, "
        "one node each)",
        "brokers[1].dLegerSelfId: not settable here, set per peer node: n0, n1, ... (node <name>-n0, <name>-n1, ...)",
        "brokers[1].preferredLeaderId: not settable here, the entry's `dledger: {preferred_leader: nX}` sets it",
    ]


def test_the_node_limit_counts_every_peer() -> None:
    brokers = [{"name": f"b{i}", "dledger": {"peers": 9}} for i in range(14)]  # 126 peers + 1 namesrv
    assert parse_topology(topo(*brokers), "t.yaml")
    assert problems(topo(*brokers, {"name": "x", "dledger": {"peers": 2}})) == [
        "nodes: 129 node processes, more than the 128 one host runs (limit)"]


def test_remoting_ports_name_peers_and_not_a_master_the_group_does_not_have() -> None:
    ok = topo({"name": "broker-a", "dledger": {}}, remoting={"ports": {"broker-a-n2": 30111}})
    assert parse_topology(ok, "t.yaml").remoting.ports == {"broker-a-n2": 30111}
    bad = topo({"name": "broker-a", "dledger": {}}, remoting={"ports": {"broker-a-0": 30111}})
    expected = ("remoting.ports.broker-a-0: not a namesrv or broker node of this topology (valid: namesrv-0, "
                "broker-a-n0, broker-a-n1, broker-a-n2)")
    assert problems(bad) == [expected]
    # the same line when the file also fails elsewhere (checked on the raw data)
    assert problems({**bad, "duration": 0}) == ["duration: must be > 0, got 0.0", expected]


def test_validate_prints_the_problem_with_its_line_and_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("name: x\nbrokers:\n  - name: broker-a\n    dledger:\n      peers: 1\n")
    result = CliRunner().invoke(main, ["validate", str(f)])
    assert result.exit_code == 2
    assert "brokers[0].dledger.peers: a DLedger group needs at least 2 peers, got 1 (line 5)" in result.output


def test_the_shipped_dledger_topology_validates() -> None:
    result = CliRunner().invoke(main, ["validate", str(QUICKSTART)])
    assert result.exit_code == 0, result.output
    assert ": ok (8 nodes," in result.output  # namesrv, 3 peers, master + slave, producer, consumer


def test_the_schema_exports_the_block() -> None:
    schema = json.loads(CliRunner().invoke(main, ["schema"]).output)
    block = schema["$defs"]["BrokerEntry"]["properties"]["dledger"]
    assert {"type": "boolean"} in block["anyOf"] and {"$ref": "#/$defs/DLedger"} in block["anyOf"]
    props = schema["$defs"]["DLedger"]["properties"]
    assert (props["peers"]["default"], props["peers"]["minimum"], props["peers"]["maximum"]) == (3, 2, 9)
    assert "preferredLeaderId" in json.dumps(props["preferred_leader"])
    assert schema["$defs"]["DLedger"]["additionalProperties"] is False
