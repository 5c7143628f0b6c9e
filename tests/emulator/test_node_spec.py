"""The node spec: typed, frozen, and strict about what the launcher writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqemu.emulator.roles.common.node_spec import NodeSpec


def test_round_trip_through_json(tmp_path: Path) -> None:
    spec = NodeSpec(name="broker-a-1", role="broker", seed=7, scale=0.05, anchor_ms=1.7e12, port=9001,
                    min_request_timeout_wall_ms=50,
                    namesrv_addrs=("127.0.0.1:1",),
                    config={"brokerRole": "SLAVE"}, broker="broker-a", broker_id=1, cluster="DefaultCluster")
    path = tmp_path / "broker-a-1.json"
    path.write_text(json.dumps(spec.to_dict()))
    back = NodeSpec.read(path)
    assert back == spec and back.config["brokerRole"] == "SLAVE" and back.namesrv_addrs == ("127.0.0.1:1",)
    assert "group" not in spec.to_dict()  # None is left out
    assert back.min_request_timeout_wall_ms == 50.0


def test_the_request_floor_reaches_the_nodes_cluster_time() -> None:
    """timing.minRequestTimeoutWallMs: topology -> spec -> the runtime's ClusterTime."""
    from rmqemu.emulator.launcher.topology_load import parse_topology
    from rmqemu.emulator.node.main import build  # binds a socket: only here
    topo = parse_topology({"name": "t", "brokers": [{"name": "broker-a"}], "timing": {"minRequestTimeoutWallMs": 75}})
    assert topo.timing.minRequestTimeoutWallMs == 75.0
    assert NodeSpec(name="namesrv-0", role="namesrv").min_request_timeout_wall_ms == 200.0  # the default
    runtime = build(NodeSpec(name="namesrv-0", role="namesrv", min_request_timeout_wall_ms=75))
    try:
        assert runtime.cluster_time.min_request_wall_ms == 75.0
    finally:
        runtime.transport.close()


def test_it_is_frozen_all_the_way_to_its_config() -> None:
    spec = NodeSpec(name="namesrv-0", role="namesrv", config={"a": 1})
    with pytest.raises(AttributeError):
        spec.scale = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.config["a"] = 2  # type: ignore[index]


@pytest.mark.parametrize(("data", "message"), [
    ({"role": "broker"}, "missing key(s) name"),
    ({"name": "x", "role": "broker", "scael": 0.1}, "unknown key(s) scael"),
    ({"name": "x", "role": "router"}, "role: expected one of namesrv, broker, producer, consumer, proxy, got 'router'"),
    ({"name": "x", "role": "broker", "scale": 0}, "scale: expected a number > 0, got 0"),
    ({"name": "x", "role": "broker", "port": "9000"}, "port: expected an integer, got '9000'"),
    ({"name": "x", "role": "broker", "anchor_ms": -1}, "anchor_ms: expected a number >= 0, got -1"),
    ({"name": "x", "role": "broker", "min_request_timeout_wall_ms": -5},
     "min_request_timeout_wall_ms: expected a number >= 0, got -5"),
    ({"name": "x", "role": "broker", "grpc": "127.0.0.1"}, "grpc: expected HOST:PORT with a port in 0..65535"),
])
def test_a_bad_spec_names_the_key(data: dict, message: str, tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError) as err:
        NodeSpec.read(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_a_spec_with_a_grpc_port_gets_one_and_says_where() -> None:
    """``grpc``: the node's transport serves MessagingService there; the role, node.start and the
    ready info learn the port actually bound."""
    from rmqemu.emulator.node.main import build
    runtime = build(NodeSpec(name="namesrv-0", role="namesrv", grpc="127.0.0.1:0"))
    try:
        addr = runtime.transport.grpc_address
        assert addr is not None and addr.startswith("127.0.0.1:") and not addr.endswith(":0")
        assert runtime.start_fields["grpc_addr"] == addr
    finally:
        runtime.transport.close()
    plain = build(NodeSpec(name="namesrv-0", role="namesrv"))
    try:
        assert plain.transport.grpc_address is None and "grpc_addr" not in plain.start_fields
    finally:
        plain.transport.close()
