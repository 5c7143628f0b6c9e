"""A producer entry's ``transaction:`` (docs/rocketmq-model.md §9.1): its shape reaches the nodes, and
every mistake is named by file, entry, field and line, with what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology, plan_nodes
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.registry import build_role
from rmqemu.errors import TopologyError
from tests.emulator.test_topology import BASE, problems

PRODUCER = {"group": "pg", "topics": ["T"]}
NEEDS = ("needs mode: sync, batch: 1 and no ordered (sendMessageInTransaction sends one message synchronously "
         "through the default queue selection), got ")


def test_the_transaction_reaches_the_nodes_workload_in_cluster_ms_and_builds_a_transactional_producer() -> None:
    topo = parse_topology({**BASE, "producers": [
        {**PRODUCER, "transaction": {"local": {"commit": 0.7, "rollback": 0.1, "unknown": 0.2},
                                     "check": {"rollback": 1}, "local_duration": "50ms", "check_duration": 2}},
        {**PRODUCER, "group": "pt", "transaction": True},
        {**PRODUCER, "group": "pf", "transaction": False}]}, "t.yaml")
    nodes = {n.name: n for n in plan_nodes(topo)}
    assert nodes["pg-0"].workload["transaction"] == {
        "local": {"commit": 0.7, "rollback": 0.1, "unknown": 0.2}, "check": {"commit": 0.0, "rollback": 1.0,
                                                                             "unknown": 0.0},
        "local_ms": 50.0, "check_ms": 2000.0}
    all_commit = {"commit": 1.0, "rollback": 0.0, "unknown": 0.0}
    assert nodes["pt-0"].workload["transaction"] == {"local": all_commit, "check": all_commit,
                                                     "local_ms": 0.0, "check_ms": 0.0}
    assert "transaction" not in nodes["pf-0"].workload
    base = {"seed": 1, "namesrv_addrs": ["127.0.0.1:1"], "namesrv_names": ["namesrv-0"], "config": {}}
    producer = build_role(NodeSpec.from_dict({**base, "name": "pg-0", "role": "producer", "group": "pg",
                                              "workload": nodes["pg-0"].workload}), "127.0.0.1:2", lambda _: None)
    assert producer.tx is not None and producer.tx.workload.local_ms == 50.0
    assert producer.tx.workload.check.rollback == 1.0


@pytest.mark.parametrize(("transaction", "extra", "expected"), [
    (7, {}, "transaction: expected true, false or a mapping {local, check, local_duration, check_duration}, got '7'"),
    ({"lokal": {}}, {}, "transaction.lokal: unknown key (did you mean local?)"),
    ({"local": {"comit": 1}}, {}, "transaction.local.comit: unknown outcome (known: commit, rollback, unknown)"),
    ({"local": {"commit": 0.7, "rollback": 0.1, "unknown": 0.1}}, {},
     "transaction.local: the shares must add up to 1, got 0.9 (commit 0.7 + rollback 0.1 + unknown 0.1)"),
    ({"check": {}}, {}, "transaction.check: the shares must add up to 1, got 0 (commit 0 + rollback 0 + unknown 0)"),
    ({"check": {"commit": 1.5}}, {}, "transaction.check.commit: must be a share from 0 to 1, got '1.5'"),
    ({"check": {"unknown": "all"}}, {}, "transaction.check.unknown: must be a share from 0 to 1, got 'all'"),
    ({"local": [0.5, 0.5]}, {}, "transaction.local: expected a mapping of shares {commit, rollback, unknown}, "
                                "got '[0.5, 0.5]'"),
    ({"local_duration": "soon"}, {}, "transaction.local_duration: expected a duration such as 5s, 150ms, 2m, 1h or "
                                     "a number of seconds, got 'soon'"),
    ({"check_duration": "-2s"}, {}, "transaction.check_duration: expected a duration >= 0, got '-2s'"),
    ({"check_duration": "2h"}, {}, "transaction.check_duration: must be at most 1h of cluster time, got '2h'"),
    (True, {"mode": "async"}, f"transaction: {NEEDS}mode: async, batch: 1"),
    (True, {"batch": 4}, f"transaction: {NEEDS}mode: sync, batch: 4"),
    (True, {"ordered": True}, f"transaction: {NEEDS}mode: sync, batch: 1, ordered"),
])
def test_each_mistake_is_named_with_its_path_and_what_was_expected(transaction: object, extra: dict,
                                                                   expected: str) -> None:
    assert problems({**BASE, "producers": [PRODUCER, {**PRODUCER, "group": "p2", **extra,
                                                      "transaction": transaction}]}) == [f"producers[1].{expected}"]


def test_a_files_mistakes_name_the_file_and_the_line(tmp_path: Path) -> None:
    f = tmp_path / "tx.yaml"
    f.write_text("name: tx\nbrokers: [{name: broker-a}]\nproducers:\n  - group: pg\n    topics: [T]\n"
                 "    transaction:\n      local: {commit: 0.7, rollback: 0.2}\n      check_duration: later\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert info.value.source == str(f) and str(f) in str(info.value)
    assert info.value.problems == [
        "producers[0].transaction.local: the shares must add up to 1, got 0.9 (commit 0.7 + rollback 0.2 + "
        "unknown 0) (line 7)",
        "producers[0].transaction.check_duration: expected a duration such as 5s, 150ms, 2m, 1h or a number of "
        "seconds, got 'later' (line 8)"]
    result = CliRunner().invoke(main, ["validate", str(f)])
    assert result.exit_code == 2 and "producers[0].transaction.local: the shares must add up to 1" in result.output


def test_the_schema_describes_the_transaction_key() -> None:
    schema = json.loads(CliRunner().invoke(main, ["schema"]).output)
    prop = schema["$defs"]["ProducerEntry"]["properties"]["transaction"]
    assert {"type": "boolean"} in prop["anyOf"] and "sendMessageInTransaction" in prop["description"]
    assert set(schema["$defs"]["Transaction"]["properties"]) == {"local", "check", "local_duration", "check_duration"}
    assert set(schema["$defs"]["Shares"]["properties"]) == {"commit", "rollback", "unknown"}
