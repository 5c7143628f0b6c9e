"""The topology's ``remoting:`` key (real clients' ports): the model, its validation errors, the
node specs and manifest entries it yields, and its warnings. No process is started."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.launcher import manifest
from rmqemu.emulator.launcher.addresses import join_namesrv_addr, manifest_namesrv_addr, namesrv_addr, note_ready
from rmqemu.emulator.launcher.launcher import Launcher
from rmqemu.emulator.launcher.topology import Topology
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology
from rmqemu.emulator.launcher.topology_remoting import remoting_warnings
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.errors import TopologyError

BASE: dict[str, Any] = {
    "name": "t", "namesrvs": 2, "brokers": [{"name": "broker-a", "slaves": 1}, {"name": "broker-b"}],
    "producers": [{"group": "pg", "topics": ["T"]}], "consumers": [{"group": "cg", "subscribe": ["T"]}],
}
VALID = "namesrv-0, namesrv-1, broker-a-0, broker-a-1, broker-b-0"


def topo(remoting: Any = None, **more: Any) -> Topology:
    return parse_topology({**BASE, **({"remoting": remoting} if remoting is not None else {}), **more}, "t.yaml")


def problems(remoting: Any, **more: Any) -> list[str]:
    with pytest.raises(TopologyError) as info:
        topo(remoting, **more)
    return info.value.problems


# ---------------------------------------------------------------- the model


def test_absent_or_false_is_off_true_is_free_loopback_ports() -> None:
    assert topo().remoting is None and topo(False).remoting is None
    on = topo(True).remoting
    assert on is not None and on.host == "127.0.0.1" and on.ports == {}
    fixed = topo({"host": "::1", "ports": {"namesrv-0": 9876, "broker-a-1": 10921}}).remoting
    assert fixed is not None and fixed.host == "::1" and fixed.ports == {"namesrv-0": 9876, "broker-a-1": 10921}
    assert topo({}).remoting == on  # an empty mapping is `true`


def test_a_topology_round_trips_through_its_manifest_dump() -> None:
    """manifest.json keeps `topology.model_dump`; `down`, `--replay` and start_cluster read it back."""
    for remoting in (None, True, {"ports": {"broker-b-0": 10911}}):
        t = topo(remoting)
        assert parse_topology(t.model_dump(mode="json"), "m").remoting == t.remoting
        assert parse_topology(t.model_dump(mode="json", exclude_unset=True), "m").remoting == t.remoting


def test_ports_out_of_range_or_not_numbers_name_their_node() -> None:
    got = problems({"ports": {"namesrv-0": 0, "broker-a-0": 65536, "broker-b-0": "x"}})
    assert got == ["remoting.ports.namesrv-0: must be >= 1, got 0",
                   "remoting.ports.broker-a-0: must be <= 65535, got 65536",
                   "remoting.ports.broker-b-0: Input should be a valid integer, unable to parse string as an integer"]


def test_a_port_given_twice_is_refused() -> None:
    assert problems({"ports": {"namesrv-0": 9876, "broker-a-0": 10911, "broker-b-0": 9876}}) == [
        "remoting.ports.broker-b-0: port 9876 is also given to namesrv-0"]


@pytest.mark.parametrize("name", ["pg-0", "cg-0", "broker-a-2", "namesrv-2", "broker-c-0", "broker-a"])
def test_a_node_that_is_no_namesrv_or_broker_is_refused_with_the_valid_names(name: str) -> None:
    assert problems({"ports": {name: 9876}}) == [
        f"remoting.ports.{name}: not a namesrv or broker node of this topology (valid: {VALID})"]


@pytest.mark.parametrize("host", ["localhost", "example.com", "127.0.0.1:9876", "", "256.1.1.1"])
def test_host_must_be_an_ip_literal(host: str) -> None:
    got = problems({"host": host})
    assert len(got) == 1 and got[0].startswith("remoting.host: ") and "is not an IP address literal" in got[0]


@pytest.mark.parametrize("value", ["yes", 1, [9876]])
def test_anything_but_a_bool_or_a_mapping_is_refused(value: Any) -> None:
    got = problems(value)
    assert len(got) == 1 and got[0].startswith("remoting: expected true, false or a mapping"), got


def test_an_unknown_key_gets_the_nearest_known_one() -> None:
    assert problems({"prots": {}}) == ["remoting.prots: unknown key (did you mean ports?)"]


def test_remoting_problems_come_with_the_others_in_one_pass() -> None:
    """A topology bad elsewhere still gets its remoting ports checked (from the raw data)."""
    got = problems({"ports": {"pg-0": 9876}}, duration="soon")
    assert got[0].startswith("duration: ")
    assert f"remoting.ports.pg-0: not a namesrv or broker node of this topology (valid: {VALID})" in got


def test_problems_in_a_file_carry_their_line(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("name: t\nbrokers:\n  - {name: broker-a}\nremoting:\n  host: localhost\n  ports:\n"
                 "    namesrv-0: 9876\n    broker-a-0: 9876\n    broker-z-0: 70000\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert info.value.problems == [
        "remoting.host: 'localhost' is not an IP address literal such as 127.0.0.1, ::1 or 0.0.0.0 "
        "(a host name is not resolved) (line 5)",
        "remoting.ports.broker-z-0: must be <= 65535, got 70000 (line 9)",
        "remoting.ports.broker-a-0: port 9876 is also given to namesrv-0 (line 8)",
        "remoting.ports.broker-z-0: not a namesrv or broker node of this topology (valid: namesrv-0, broker-a-0) "
        "(line 9)",
    ]


def test_the_schema_exports_the_key() -> None:
    result = CliRunner().invoke(main, ["schema"])
    schema = json.loads(result.stdout)
    assert {"type": "boolean"} in schema["properties"]["remoting"]["anyOf"]
    assert set(schema["$defs"]["Remoting"]["properties"]) == {"host", "ports"}
    assert schema["$defs"]["Remoting"]["properties"]["ports"]["additionalProperties"] == {
        "type": "integer", "minimum": 1, "maximum": 65535}


# ---------------------------------------------------------------- specs and the manifest


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Any]:
    """A Launcher that spawns nothing (its control socket only): builds specs for a topology."""
    made: list[Launcher] = []

    def make(t: Topology) -> Launcher:
        made.append(Launcher(t, run_dir=tmp_path / f"run-{len(made)}"))
        made[-1].started_ms = 1.0
        return made[-1]

    yield make
    for cluster in made:
        cluster.control.close()


def spec(cluster: Launcher, name: str) -> NodeSpec:
    manifest.write_spec(cluster, name, ["namesrv-0", "namesrv-1"])
    return NodeSpec.read(cluster.run_dir / "specs" / f"{name}.json")


def test_namesrvs_and_brokers_get_a_remoting_address_clients_never(launcher: Any) -> None:
    cluster = launcher(topo({"host": "127.0.0.2", "ports": {"broker-a-1": 10921}}))
    got = {n: spec(cluster, n).remoting for n in cluster.plans}
    assert got == {"namesrv-0": "127.0.0.2:0", "namesrv-1": "127.0.0.2:0", "broker-a-0": "127.0.0.2:0",
                   "broker-b-0": "127.0.0.2:0", "broker-a-1": "127.0.0.2:10921", "pg-0": None, "cg-0": None}


def test_off_means_no_remoting_in_any_spec_nor_the_manifest(launcher: Any) -> None:
    cluster = launcher(topo())
    note_ready(cluster, "namesrv-0", {"addr": "127.0.0.1:5000", "pid": 1})
    assert all(spec(cluster, n).remoting is None for n in cluster.plans)
    manifest.write(cluster)
    nodes = json.loads((cluster.run_dir / "manifest.json").read_text())["nodes"]
    assert not any("remoting_addr" in e for e in nodes.values())
    assert namesrv_addr(cluster) is None


def test_a_restarted_node_binds_the_remoting_port_it_bound_first(launcher: Any) -> None:
    cluster = launcher(topo(True))
    assert spec(cluster, "broker-a-0").remoting == "127.0.0.1:0"
    note_ready(cluster, "broker-a-0", {"addr": "127.0.0.1:5001", "pid": 1, "remoting_addr": "127.0.0.1:41234"})
    assert cluster.ports["broker-a-0"] == 5001 and cluster.remoting_addrs["broker-a-0"] == "127.0.0.1:41234"
    again = spec(cluster, "broker-a-0")
    assert (again.port, again.remoting) == (5001, "127.0.0.1:41234")


def test_the_manifest_records_remoting_addresses_and_namesrv_addr_joins_them(launcher: Any) -> None:
    cluster = launcher(topo(True))
    for i, name in enumerate(["namesrv-1", "namesrv-0", "broker-a-0", "pg-0"]):
        note_ready(cluster, name, {"addr": f"127.0.0.1:{5000 + i}", "pid": i,
                                   **({"remoting_addr": f"127.0.0.1:{9000 + i}"} if name != "pg-0" else {})})
    manifest.write(cluster)
    data = json.loads((cluster.run_dir / "manifest.json").read_text())
    assert data["nodes"]["broker-a-0"]["remoting_addr"] == "127.0.0.1:9002"
    assert "remoting_addr" not in data["nodes"]["pg-0"] and data["topology"]["remoting"]["host"] == "127.0.0.1"
    assert namesrv_addr(cluster) == "127.0.0.1:9001;127.0.0.1:9000"  # namesrv-0 first, as the topology orders them
    assert manifest_namesrv_addr(data) == namesrv_addr(cluster)
    assert join_namesrv_addr({}, ["namesrv-0"]) is None


# ---------------------------------------------------------------- warnings


def test_a_fast_scale_warns_that_real_clients_would_be_cut_between_heartbeats() -> None:
    (warning,) = remoting_warnings(topo(True, timing={"scale": 0.01}))
    assert warning == (
        "remoting: at timing.scale 0.01 a node closes a connection idle for 120 s x 0.01 = 1.2 wall s, but real "
        "clients live in wall time and heartbeat every 30 wall s: their connections would be closed between "
        "heartbeats. timing.scale 1.0 is faithful for real clients; otherwise set the client's heartbeat interval "
        "below 1200 ms (Java and ali-ons: heartbeatBrokerInterval) and scale its other intervals likewise "
        "(pollNameServerInterval, ...)")


def test_no_warning_from_scale_0_25_nor_without_remoting() -> None:
    assert remoting_warnings(topo(True, timing={"scale": 0.25})) == []
    assert remoting_warnings(topo(True, timing={"scale": 1.0})) == []
    assert remoting_warnings(topo(None, timing={"scale": 0.01})) == []


def test_a_shorter_idle_close_on_one_broker_counts() -> None:
    t = topo(True, timing={"scale": 1.0},
             brokers=[{"name": "broker-a", "slaves": 1, "serverChannelMaxIdleTimeSeconds": 20}, {"name": "broker-b"}])
    (warning,) = remoting_warnings(t)
    assert "idle for 20 s x 1 = 20 wall s" in warning and "below 20000 ms" in warning


def test_a_host_that_is_not_loopback_warns() -> None:
    assert remoting_warnings(topo({"host": "::1"}, timing={"scale": 1.0})) == []
    (warning,) = remoting_warnings(topo({"host": "0.0.0.0"}, timing={"scale": 1.0}))
    assert warning == ("remoting.host 0.0.0.0 is not a loopback address: the remoting ports accept connections "
                       "from other hosts, with no authentication")


def test_validate_prints_the_warnings_on_stderr_and_still_exits_0(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("name: t\ntiming: {scale: 0.01}\nbrokers: [{name: broker-a}]\nremoting: {host: 10.0.0.1}\n")
    result = CliRunner().invoke(main, ["validate", str(f)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{f}: ok (2 nodes, 60 cluster s at scale 0.01)\n"
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith(f"warning: {f}: remoting") for line in lines)
    assert "1.2 wall s" in lines[0] and "10.0.0.1 is not a loopback address" in lines[1]
