"""Topology validation: one message per problem with its path, node naming, schema export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology, plan_nodes
from rmqemu.errors import TopologyError
from rmqemu.faults.launch_glue import check_topology_faults

TOPOLOGIES = sorted(Path(__file__).resolve().parents[2].joinpath("topologies").glob("*.yaml"))

BASE = {"name": "t", "brokers": [{"name": "broker-a"}]}


def problems(data: dict) -> list[str]:
    """Every problem ``validate`` reports: the schema's, then the faults list's against the nodes."""
    with pytest.raises(TopologyError) as info:
        check_topology_faults(parse_topology(data, "t.yaml"), "t.yaml")
    return info.value.problems


def test_every_shipped_topology_is_valid() -> None:
    assert TOPOLOGIES, "no topologies shipped"
    for path in TOPOLOGIES:
        topo = load_topology(path)
        assert plan_nodes(topo)


def test_negative_slaves_names_its_path() -> None:
    assert problems({**BASE, "brokers": [{"name": "a"}, {"name": "b", "slaves": -1}]}) == [
        "brokers[1].slaves: must be >= 0, got -1"
    ]


def test_every_problem_is_reported_once() -> None:
    got = problems({"name": "t", "brokers": [{"name": "a b", "slaves": -2}], "bogus": 1,
                    "timing": {"scale": 0}, "duration": "soon"})
    assert "brokers[0].name: 'a b' may only contain letters, digits, %, |, _ and -" in got
    assert "brokers[0].slaves: must be >= 0, got -2" in got
    assert "bogus: unknown key" in got
    assert "timing.scale: must be >= 0.001, got 0" in got
    assert any(p.startswith("duration: expected a duration") for p in got)
    assert len(got) == 5


def test_missing_required_keys() -> None:
    assert problems({"seed": 1}) == ["name: required key is missing", "brokers: required key is missing"]


def test_topic_on_unknown_broker() -> None:
    got = problems({**BASE, "topics": [{"name": "T", "brokers": ["broker-z"]}]})
    assert got == ["topics[0].brokers[0]: unknown broker 'broker-z' (known: broker-a)"]


def test_unknown_rocketmq_key_on_a_broker_is_an_error() -> None:
    got = problems({**BASE, "brokers": [{"name": "broker-a", "autoCreateTopicEnabled": True}]})
    assert len(got) == 1 and got[0].startswith("brokers[0]") and "autoCreateTopicEnabled" in got[0]


def test_bad_yaml_names_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("name: x\nbrokers: [\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert info.value.problems[0].startswith("line ")


def test_node_names_follow_design_and_shared_groups_stay_unique() -> None:
    topo = parse_topology({
        "name": "t", "namesrvs": 2,
        "brokers": [{"name": "broker-a", "slaves": 1}, {"name": "broker-b"}],
        "producers": [{"group": "pg", "instances": 2, "topics": ["T"]}],
        "consumers": [{"group": "cg", "subscribe": ["T"]}, {"group": "cg", "subscribe": ["U:tagA"]}],
    })
    nodes = plan_nodes(topo)
    assert [n.name for n in nodes] == ["namesrv-0", "namesrv-1", "broker-a-0", "broker-b-0", "broker-a-1",
                                       "pg-0", "pg-1", "cg-0", "cg-1"]
    slave = nodes[4]
    assert (slave.broker, slave.broker_id, slave.config["brokerRole"]) == ("broker-a", 1, "SLAVE")
    assert nodes[8].workload["subscribe"] == [{"topic": "U", "expression": "tagA"}]


def test_cli_validate_exits_2_and_spawns_nothing(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("name: x\nbrokers:\n  - {name: broker-a, slaves: -1}\n")
    result = CliRunner().invoke(main, ["launch", str(f), "--root", str(tmp_path / "runs")])
    assert result.exit_code == 2
    assert "brokers[0].slaves: must be >= 0, got -1" in result.output
    assert not (tmp_path / "runs").exists()  # nothing started, not even a run directory


def test_cli_validate_ok() -> None:
    result = CliRunner().invoke(main, ["validate", *map(str, TOPOLOGIES)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": ok (") == len(TOPOLOGIES)


def test_schema_is_json_schema_with_all_sections() -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert {"name", "brokers", "namesrvs", "faults", "duration", "timing"} <= set(schema["properties"])


def test_all_kinds_of_mistakes_are_reported_in_one_pass() -> None:
    """Field errors, RocketMQ key errors of the same entry and unknown brokers, all at once
    (pydantic alone would stop at the field errors and hide the rest until they are fixed)."""
    got = problems({"name": "t", "brokers": [{"name": "broker-a", "slaves": -1, "autoCreateTopicEnable": "maybe",
                                              "bogusKey": 1}],
                    "topics": [{"name": "T", "brokers": ["broker-z"]}],
                    "producers": [{"group": "pg", "topics": ["T"], "rate": -1, "sendMsgTimeout": "abc"}]})
    assert got == [
        "brokers[0].slaves: must be >= 0, got -1",
        "producers[0].rate: must be >= 0, got -1",
        "brokers[0].autoCreateTopicEnable: must be bool, got str 'maybe'",
        "brokers[0].bogusKey: unknown broker config key",
        "producers[0].sendMsgTimeout: must be int, got str 'abc'",
        "topics[0].brokers[0]: unknown broker 'broker-z' (known: broker-a)",
    ]


def test_a_misspelt_key_gets_the_nearest_known_one() -> None:
    got = problems({"name": "t", "duraton": "10s", "timing": {"scael": 0.1},
                    "brokers": [{"name": "broker-a", "autoCreateTopicEnabel": True}],
                    "topics": [{"name": "T", "brokers": ["broker-a"], "queus": 2}],
                    "producers": [{"group": "pg", "topics": ["T"], "sendMsgTimout": 5}]})
    assert sorted(got) == sorted([
        "duraton: unknown key (did you mean duration?)",
        "timing.scael: unknown key (did you mean scale?)",
        "topics[0].queus: unknown key (did you mean queues?)",
        "brokers[0].autoCreateTopicEnabel: unknown broker config key (did you mean autoCreateTopicEnable?)",
        "producers[0].sendMsgTimout: unknown ProducerConfig key (did you mean sendMsgTimeout?)",
    ])


def test_broker_identity_keys_belong_to_the_entry() -> None:
    got = problems({"name": "t", "brokers": [
        {"name": "broker-a", "brokerRole": "SLAVE"},
        {"name": "broker-b", "brokerId": 1, "brokerName": "x"},
        {"name": "broker-c", "brokerRole": "SYNC_MASTER", "slaves": 1}]})
    assert got == [
        "brokers[0].brokerRole: SLAVE is given to the slaves that `slaves: N` creates, and the entry's own "
        "node (brokerId 0) is the master (ASYNC_MASTER or SYNC_MASTER)",
        "brokers[1].brokerId: not settable here, set per node: 0 for the master, 1..N for `slaves: N`",
        "brokers[1].brokerName: not settable here, the entry's `name` sets it",
    ]


def test_every_problem_of_the_faults_list_is_reported_at_load() -> None:
    """A faults: list is resolved when the file loads (validate, launch and up all see it):
    each entry on its own, then overlaps among those that resolve."""
    got = problems({"name": "t", "brokers": [{"name": "broker-a"}, {"name": "broker-b"}], "duration": "100s",
                    "faults": [{"at": "1s", "kill": "broker-z-0"},
                               {"at": "3s", "pause": "broker-a-0", "duration": "10s"},
                               {"at": "4s", "kill": "broker-a-0"},
                               {"at": "500s", "kill": "broker-b-0"}]})
    assert len(got) == 3, got
    assert got[0].startswith("faults[0] (kill broker-z-0 at 1s): unknown target 'broker-z-0'")
    assert got[1] == "faults[3] (kill broker-b-0 at 500s): starts after the end of the run (100s)"
    assert got[2].startswith("faults[2]: start f3 (kill broker-a-0)") and "held by f2 (pause" in got[2]


def test_a_producers_delay_level_is_one_level_or_a_round_robin_list() -> None:
    """docs/rocketmq-model.md §2.9: a level for every message, or a list used in turn; each bad shape named."""
    producer = {"group": "pg", "topics": ["T"]}
    topo = parse_topology({**BASE, "producers": [{**producer, "delay_level": [0, 3]}]}, "t.yaml")
    assert [n.workload["delay_level"] for n in plan_nodes(topo) if n.role == "producer"] == [[0, 3]]
    for bad in (-1, "3", True, [], [1, -2], 2.0, 2**31):
        (got,) = problems({**BASE, "producers": [{**producer, "delay_level": bad}]})
        assert got.startswith("producers[0].delay_level: expected a level (an int from 0, none, to 2147483647)")
    assert problems({**BASE, "producers": [{**producer, "batch": 4, "delay_level": [0, 2]}]}) == [
        "producers[0].delay_level: a batch cannot carry a delay level (RocketMQ's client refuses it, the broker "
        "answers MESSAGE_ILLEGAL)"]
    schema = json.loads(CliRunner().invoke(main, ["schema"]).output)
    text = json.dumps(schema)
    assert "used round-robin" in text and "docs/rocketmq-model.md \\u00a72.9" in text


def test_a_producers_body_kind_reaches_its_workload_and_a_bad_one_is_named() -> None:
    """docs/design.md §5 "Message bodies": filler by default; the kinds are the schema's enum."""
    producer = {"group": "pg", "topics": ["T"]}
    topo = parse_topology({**BASE, "producers": [producer, {**producer, "group": "pg-2", "body": "mixed"}]}, "t.yaml")
    assert [n.workload["body"] for n in plan_nodes(topo) if n.role == "producer"] == ["filler", "mixed"]
    for bad in ("Text", 1, None):
        assert problems({**BASE, "producers": [{**producer, "body": bad}]}) == [
            "producers[0].body: Input should be 'filler', 'text', 'bytes' or 'mixed'"]
    schema = json.loads(CliRunner().invoke(main, ["schema"]).output)
    assert schema["$defs"]["ProducerEntry"]["properties"]["body"]["enum"] == ["filler", "text", "bytes", "mixed"]
