"""A DLedger group in the launcher: its peers' specs and manifest entries, finding its leader
and its master from the peers' ``state`` (made up here: no process runs), creating topics on the
master, reading it at the drain."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import pytest

from rmqemu.emulator.launcher import admin, drain, manifest, startup
from rmqemu.emulator.launcher import dledger as dl
from rmqemu.emulator.launcher.launcher import Launcher
from rmqemu.emulator.launcher.topology_load import parse_topology
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.errors import ClusterError, ControlTimeout

TOPO = {"name": "t", "brokers": [{"name": "broker-a", "dledger": {"preferred_leader": "n0"}},
                                 {"name": "broker-b", "slaves": 1}],
        "topics": [{"name": "T", "brokers": ["broker-a", "broker-b"]}, {"name": "U", "brokers": ["broker-a"]}]}


def peer(broker_id: int | None, role: str | None = None, term: int = 1) -> dict[str, Any]:
    """A broker's `state` as far as these tests read it."""
    out: dict[str, Any] = {"broker_id": broker_id}
    if role is not None:
        out["dledger"] = {"group": "broker-a", "role": role, "term": term}
    return out


class FakeControl:
    """The control plane of a run whose nodes answer `state` with ``states()`` (a node missing
    from it does not answer); nothing else arrives."""

    def __init__(self, states: Callable[[], dict[str, Any]]) -> None:
        self.states = states
        self.asked: list[str] = []

    def call(self, node: str, name: str, args: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
        assert name == "state"
        self.asked.append(node)
        now = self.states()
        if node not in now:
            raise ControlTimeout(node, name, timeout_ms)
        return now[node]

    def poll(self, timeout_ms: float) -> list[Any]:
        return []


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Launcher]:
    """A launcher never started: every node 'running', its control plane a fake set per test."""
    c = Launcher(parse_topology(TOPO, "t.yaml"), run_dir=tmp_path / "run")
    c.started_ms = 1.0
    c.control.close()
    c.procs = {n: SimpleNamespace(alive=lambda: True, exit_seen=False) for n in c.plans}  # type: ignore[misc]
    c.addrs = {n: f"127.0.0.1:{5000 + i}" for i, n in enumerate(c.plans)}
    yield c


def answering(c: Launcher, states: dict[str, Any] | Callable[[], dict[str, Any]]) -> FakeControl:
    c.control = FakeControl(states if callable(states) else lambda: states)  # type: ignore[assignment]
    return c.control  # type: ignore[return-value]


# ---------------------------------------------------------------- specs, manifest, node table


def test_a_peers_spec_carries_the_keys_and_no_broker_id(cluster: Launcher) -> None:
    manifest.write_spec(cluster, "broker-a-n2", ["namesrv-0"])
    spec = NodeSpec.read(cluster.run_dir / "specs" / "broker-a-n2.json")
    assert (spec.role, spec.broker, spec.broker_id, spec.cluster) == ("broker", "broker-a", None, "DefaultCluster")
    assert {k: spec.config[k] for k in ("enableDLegerCommitLog", "dLegerGroup", "dLegerPeers", "dLegerSelfId",
                                        "preferredLeaderId")} == {
        "enableDLegerCommitLog": True, "dLegerGroup": "broker-a",
        "dLegerPeers": "n0-broker-a-n0;n1-broker-a-n1;n2-broker-a-n2", "dLegerSelfId": "n2",
        "preferredLeaderId": "n0"}
    assert "brokerId" not in spec.config
    manifest.write_spec(cluster, "broker-b-1", ["namesrv-0"])
    assert NodeSpec.read(cluster.run_dir / "specs" / "broker-b-1.json").broker_id == 1


def test_the_manifest_and_the_node_table_carry_each_peers_id(cluster: Launcher) -> None:
    cluster.procs = {}  # not spawned: no pid in the manifest
    manifest.write(cluster)
    nodes = json.loads((cluster.run_dir / "manifest.json").read_text())["nodes"]
    entry = {k: v for k, v in nodes["broker-a-n1"].items() if k not in ("config", "pid", "create_time", "addr")}
    assert entry == {"role": "broker", "broker": "broker-a", "peer": "n1", "cluster": "DefaultCluster",
                     "autoCreateTopicEnable": True}
    assert "peer" not in nodes["broker-b-0"] and nodes["broker-b-0"]["broker_id"] == 0
    infos = cluster.node_infos()
    assert (infos["broker-a-n1"].peer, infos["broker-a-n1"].broker_id) == ("n1", None)
    assert not infos["broker-a-n1"].is_master and not infos["broker-a-n1"].is_slave
    assert infos["broker-b-0"].is_master and infos["broker-b-1"].is_slave
    assert [n for n in infos if infos[n].peer] == ["broker-a-n0", "broker-a-n1", "broker-a-n2"]


def test_a_peers_exit_event_has_its_broker_and_no_null_broker_id(cluster: Launcher) -> None:
    cluster.procs["broker-a-n1"].pid = 4242  # type: ignore[attr-defined]
    cluster.write_exit("broker-a-n1", {"signal": 9}, ts=5.0)
    lines = (cluster.run_dir / "events" / "broker-a-n1.jsonl").read_text().splitlines()
    (event,) = [json.loads(line) for line in lines]
    assert event == {"ts": 5.0, "node": "broker-a-n1", "kind": "node.exit", "role": "broker", "pid": 4242,
                     "signal": 9, "broker": "broker-a"}


# ---------------------------------------------------------------- leader and master, judged


def test_the_leader_is_the_peer_leading_the_highest_term() -> None:
    assert dl.leader_of({"a-n0": peer(1, "FOLLOWER", 3), "a-n1": peer(0, "LEADER", 3), "a-n2": None}) == "a-n1"
    # an old leader that has not heard of the new term yet
    assert dl.leader_of({"a-n0": peer(0, "LEADER", 2), "a-n1": peer(0, "LEADER", 5)}) == "a-n1"
    assert dl.leader_of({"a-n0": peer(1, "CANDIDATE", 4), "a-n1": peer(2, "FOLLOWER", 4), "a-n2": None}) is None
    assert dl.leader_of({"a-n0": peer(0)}) is None  # no dledger block: no leader known
    assert dl.leader_of({}) is None


def test_the_master_is_the_one_peer_with_broker_id_0_or_the_newest_leader_among_several() -> None:
    assert dl.masters_in({"a-n0": peer(1), "a-n1": peer(0), "a-n2": None}) == ["a-n1"]
    assert dl.master_of({"a-n0": peer(1), "a-n1": peer(0), "a-n2": None}) == "a-n1"
    two = {"a-n0": peer(0, "LEADER", 2), "a-n1": peer(0, "LEADER", 3), "a-n2": peer(3, "FOLLOWER", 3)}
    assert dl.masters_in(two) == ["a-n0", "a-n1"] and dl.master_of(two) == "a-n1"
    assert dl.master_of({"a-n0": peer(-1, "CANDIDATE"), "a-n1": peer(2, "FOLLOWER")}) is None


def test_dledger_leader_asks_only_the_live_running_peers(cluster: Launcher) -> None:
    control = answering(cluster, {"broker-a-n0": peer(1, "FOLLOWER", 2), "broker-a-n1": peer(0, "LEADER", 2),
                                  "broker-a-n2": peer(0, "LEADER", 1)})
    assert cluster.dledger_leader("broker-a") == "broker-a-n1"
    assert sorted(control.asked) == ["broker-a-n0", "broker-a-n1", "broker-a-n2"]  # no classic node asked
    cluster.stopped.add("broker-a-n1")  # paused: it cannot answer, and is not asked
    control.asked.clear()
    assert cluster.dledger_leader("broker-a") == "broker-a-n2"
    assert sorted(control.asked) == ["broker-a-n0", "broker-a-n2"]
    cluster.procs["broker-a-n2"] = SimpleNamespace(alive=lambda: False, exit_seen=True)  # type: ignore[assignment]
    assert cluster.dledger_leader("broker-a") is None
    assert cluster.dledger_leader("broker-b") is None  # a classic group has no DLedger leader
    answering(cluster, {})  # nobody answers in time
    cluster.stopped.clear()
    assert cluster.dledger_leader("broker-a") is None


# ---------------------------------------------------------------- topics on the master


def test_topics_go_to_the_elected_master_once_exactly_one_peer_is_master(cluster: Launcher,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def states() -> dict[str, Any]:  # an election, then an old master stepping down
        look = control.asked.count("broker-a-n0")  # the peers are asked in turn, n0 first
        if look <= 3:
            return {"broker-a-n0": peer(-1, "CANDIDATE"), "broker-a-n1": peer(-1, "CANDIDATE")}
        if look <= 6:
            return {"broker-a-n0": peer(0, "LEADER", 1), "broker-a-n1": peer(0, "LEADER", 2),
                    "broker-a-n2": peer(3, "FOLLOWER", 2)}
        return {"broker-a-n0": peer(1, "FOLLOWER", 2), "broker-a-n1": peer(0, "LEADER", 2),
                "broker-a-n2": peer(3, "FOLLOWER", 2)}

    control = answering(cluster, states)
    created: list[tuple[str, str]] = []
    monkeypatch.setattr(admin, "update_topic", lambda addr, topic, timeout_ms: created.append((addr, topic.name)))
    startup.create_topics(cluster)
    a, b = cluster.addrs["broker-a-n1"], cluster.addrs["broker-b-0"]
    assert created == [(a, "T"), (b, "T"), (a, "U")]
    assert control.asked.count("broker-a-n0") == 7  # waited while none, then two, said brokerId 0; asked once


def test_a_group_without_a_master_in_time_is_an_error_naming_it_and_each_peer(cluster: Launcher) -> None:
    answering(cluster, {"broker-a-n0": peer(-1, "CANDIDATE", 7), "broker-a-n1": peer(2, "FOLLOWER", 7)})
    cluster.procs["broker-a-n2"] = SimpleNamespace(alive=lambda: False, exit_seen=True)  # type: ignore[assignment]
    with pytest.raises(ClusterError) as info:
        dl.wait_master(cluster, "broker-a", timeout_s=0.2)
    assert str(info.value) == (
        "DLedger group broker-a: no single master (a peer whose broker_id is 0) after 0.2s: broker-a-n0 broker_id -1 "
        "CANDIDATE term 7, broker-a-n1 broker_id 2 FOLLOWER term 7, broker-a-n2 not running")


# ---------------------------------------------------------------- the drain reads the master


def test_the_drain_reads_the_group_from_the_peer_that_is_master_at_each_look(cluster: Launcher) -> None:
    queues = {"queues": {"T:0": 5}, "offsets": {"T@cg": {"0": 5}}}
    now = {"broker-a-n0": {**peer(0, "LEADER", 1), **queues, "offsets": {"T@cg": {"0": 2}}},
           "broker-a-n1": peer(1, "FOLLOWER", 1), "broker-a-n2": peer(3, "FOLLOWER", 1),
           "broker-b-0": {"queues": {}, "offsets": {}}}
    answering(cluster, lambda: now)
    probe = drain.cluster_probe(cluster, [drain.GroupWatch("cg", ("T",), False, ("cg-0",))])
    assert [(lag.broker, lag.lag) for lag in probe(1000.0).lags] == [("broker-a", 3)]
    now.update({"broker-a-n0": peer(1, "FOLLOWER", 2), "broker-a-n1": {**peer(0, "LEADER", 2), **queues}})
    assert probe(1000.0).empty  # the new master has the group caught up
    now.update({"broker-a-n1": peer(-1, "CANDIDATE", 3)})
    assert probe(1000.0).unreadable == ["broker-a"]  # no master at this look
