"""The proxy role over real namesrv and broker roles (tests/roles/proxy_helpers.py): routes, sends,
settings and the refusals a 5.x client relies on (docs/rocketmq-model.md §10.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmqemu.emulator.roles.common.base import Emit, Request
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import sessions
from rmqemu.emulator.roles.proxy.sending import consistent_hash

from .broker_helpers import send
from .proxy_helpers import GRPC_ADDR, ProxyRig
from .test_cluster_flow import A0, B0

Code = pb.Code


def rig_with_topic(topic: str = "T") -> ProxyRig:
    rig = ProxyRig()
    a0 = rig.cluster.add("broker-a", 0, A0)
    rig.cluster.add("broker-b", 0, B0)
    send(a0, topic)  # auto-created on broker-a (4 queues)
    rig.cluster.pump()
    return rig


def route(rig: ProxyRig, topic: str = "T", endpoints: pb.Endpoints | None = None) -> pb.QueryRouteResponse:
    req = pb.QueryRouteRequest()
    req.topic.name = topic
    if endpoints is not None:
        req.endpoints.CopyFrom(endpoints)
    [resp] = rig.call("QueryRoute", req)
    return resp


def message(topic: str = "T", msg_id: str = "01ABC", body: bytes = b"hello", **sp: object) -> pb.Message:
    m = pb.Message(body=body)
    m.topic.name = topic
    m.system_properties.message_id = msg_id
    m.system_properties.message_type = sp.pop("message_type", pb.NORMAL)  # type: ignore[arg-type]
    for k, v in sp.items():
        setattr(m.system_properties, k, v)
    return m


def lines(rig: ProxyRig, kind: str) -> list[tuple[str | None, dict]]:
    """(node, fields) of the events the proxy wrote: node None for its own lines."""
    return [(a.node, a.fields) for a in rig.proxy.actions if isinstance(a, Emit) and a.kind == kind]


def test_route_names_the_proxy_not_the_brokers() -> None:
    rig = rig_with_topic()
    resp = route(rig)
    assert resp.status.code == Code.OK
    assert [(q.broker.name, q.id, q.permission) for q in resp.message_queues] == [
        ("broker-a", i, pb.READ_WRITE) for i in range(4)]
    host, _, port = GRPC_ADDR.rpartition(":")
    for q in resp.message_queues:
        assert q.broker.id == 0
        assert [(a.host, a.port) for a in q.broker.endpoints.addresses] == [(host, int(port))]
        assert list(q.accept_message_types) == [pb.NORMAL]
    [(own, view), (client, answered)] = lines(rig, "client.route")
    assert own is None and view["view"] == "proxy" and view["source"] == "namesrv-0"
    assert client == "client@42" and answered["source"] == "proxy-0"
    assert answered["publish_queues"] == view["publish_queues"]


def test_route_echoes_the_endpoints_the_client_dialled() -> None:
    rig = rig_with_topic()
    asked = pb.Endpoints(scheme=pb.DOMAIN_NAME)
    asked.addresses.add(host="proxy.example", port=8081)
    resp = route(rig, endpoints=asked)
    assert {q.broker.endpoints.addresses[0].host for q in resp.message_queues} == {"proxy.example"}


def test_unknown_topic_is_topic_not_found() -> None:
    rig = rig_with_topic()
    assert route(rig, "Nope").status.code == Code.TOPIC_NOT_FOUND


def test_send_goes_to_a_master_and_echoes_the_client_id() -> None:
    rig = rig_with_topic()
    route(rig)
    [resp] = rig.call("SendMessage", pb.SendMessageRequest(messages=[message(msg_id="01AA", body=b"\x00\xff")]))
    assert resp.status.code == Code.OK
    [entry] = resp.entries
    assert entry.message_id == "01AA" and entry.transaction_id == "01AA"
    store = rig.cluster.brokers[A0].role.store
    [stored] = [r for q in range(4) for r in store.get("T", q, 0, 32).messages if r["msgId"] == "01AA"]
    assert body_bytes(stored) == b"\x00\xff" and stored["properties"]["PGROUP"] == "T"
    [(node, line)] = lines(rig, "send")
    assert node == "client@42" and line["mode"] == "grpc" and line["proxy"] == "proxy-0"
    assert line["broker"] == "broker-a" and line["outcome"] == "ok" and line["group"] == "T"
    assert line["msg_id"] == "01AA"


def test_a_message_of_another_type_is_refused() -> None:
    rig = rig_with_topic()
    route(rig)
    fifo = message(msg_id="01AB", message_type=pb.FIFO, message_group="g1")
    [resp] = rig.call("SendMessage", pb.SendMessageRequest(messages=[fifo]))
    assert resp.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE


def test_malformed_protobuf_is_bad_request_and_the_proxy_serves_on() -> None:
    rig = rig_with_topic()
    [resp] = rig.call("SendMessage", b"\xff\xff\xff\xff")
    assert resp.status.code == Code.BAD_REQUEST
    assert route(rig).status.code == Code.OK


def test_a_timestamp_past_a_java_long_is_refused_before_any_broker() -> None:
    """5.x's Timestamps.toMillis throws on these (a 500); here they once reached the broker
    request's header and the proxy died encoding it."""
    rig = rig_with_topic()
    route(rig)
    for name, seconds in (("born_timestamp", 2**62), ("delivery_timestamp", -(2**62)),
                          ("orphaned_transaction_recovery_duration", 2**63 - 1)):
        m = message(msg_id="01AC")
        getattr(m.system_properties, name).seconds = seconds
        mark = rig.proxy.mark()
        [resp] = rig.call("SendMessage", pb.SendMessageRequest(messages=[m]))
        assert resp.status.code == Code.INTERNAL_SERVER_ERROR and "overflow" in resp.status.message
        assert not [a for a in rig.proxy.actions[mark:] if isinstance(a, Request)]
    m = message(msg_id="01AD")
    m.system_properties.born_timestamp.seconds = 253402300799  # 9999-12-31: ms still fit
    [resp] = rig.call("SendMessage", pb.SendMessageRequest(messages=[m]))
    assert resp.status.code == Code.OK


def test_telemetry_needs_a_client_id_and_answers_merged_settings() -> None:
    rig = rig_with_topic()
    settings = pb.Settings(client_type=pb.PRODUCER)
    settings.publishing.topics.add(name="T")
    [refused] = rig.call("Telemetry", pb.TelemetryCommand(settings=settings), client_id=None, channel="grpc:t0")
    assert refused.status.code == Code.CLIENT_ID_REQUIRED and rig.ended("grpc:t0")
    [reply] = rig.call("Telemetry", pb.TelemetryCommand(settings=settings), channel="grpc:t1")
    assert reply.status.code == Code.OK
    assert reply.settings.publishing.max_body_size == 4 * 1024 * 1024
    assert reply.settings.backoff_policy.WhichOneof("strategy") == "exponential_backoff"
    assert not rig.ended("grpc:t1")  # the stream stays open for pushed commands


def test_route_cache_serves_the_old_view_while_it_reloads() -> None:
    rig = rig_with_topic()
    route(rig)
    loads = rig.proxy.role.routes.loads
    rig.proxy.advance(19_000)
    route(rig)
    assert rig.proxy.role.routes.loads == loads  # fresh enough
    rig.proxy.advance(2_000)
    route(rig)
    assert rig.proxy.role.routes.loads == loads + 1  # refreshAfterWrite: reloaded on read


@given(st.integers(-(2**31), 2**31 - 1), st.integers(1, 64))
def test_consistent_hash_moves_keys_only_to_a_new_bucket(key: int, buckets: int) -> None:
    before, after = consistent_hash(key, buckets), consistent_hash(key, buckets + 1)
    assert 0 <= before < buckets
    assert after == before or after == buckets


def test_a_send_before_any_route_loads_the_topics_type_on_demand() -> None:
    rig = rig_with_topic()  # no QueryRoute first
    [resp] = rig.call("SendMessage", pb.SendMessageRequest(messages=[message(msg_id="01AC")]))
    assert resp.status.code == Code.OK, resp.status


def test_topics_and_clients_a_hostile_caller_invents_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "MAX_SESSIONS", 5)
    rig = rig_with_topic()
    rig.proxy.role.routes.max_entries = 5
    rig.proxy.role.cfg.topicRouteServiceCacheMaxNum = 5
    for i in range(12):
        route(rig, f"Nope{i}")
        rig.call("Heartbeat", pb.HeartbeatRequest(), client_id=f"forged-{i}")
    assert len(rig.proxy.role.routes.entries) <= 5 and len(rig.proxy.role.topic_types.known) <= 5
    assert len(rig.proxy.role.sessions.by_client) <= 5
    assert route(rig).status.code == Code.OK
