"""Hostile input on a proxy's gRPC port (issue 42): what anyone on the host can send to
MessagingService must end at most its own call. Against a real cluster (two brokers, one proxy,
scale 1.0), from this process with grpcio and raw bytes: malformed protobuf on every method,
unknown RPCs and services, calls without a client id, forged receipt handles (hypothesis),
messages over the size limits, an endless Telemetry stream, bytes that are not gRPC, and a
thousand connections each holding a Telemetry stream while a normal call is made. Afterwards every node is alive, none
wrote ``node.error``, and the real RocketMQ 5 Python client sends, receives and acks.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import grpc
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.transport import _grpc
from tests.integration import hostile_grpc_lib as lib
from tests.integration.hostile_grpc_lib import CLIENT, server_stream, telemetry, unary
from tests.realclients import py5client

TOPO: dict[str, Any] = {
    "name": "hostile-grpc", "seed": 42, "timing": {"scale": 1.0},
    "brokers": [{"name": "broker-a"}, {"name": "broker-b"}],
    "topics": [{"name": "T", "brokers": ["broker-a", "broker-b"]}, {"name": "A", "brokers": ["broker-a"]},
               {"name": "R", "brokers": ["broker-b"]}],  # R: the real client's, one broker: one receive reads all
    "proxies": {"count": 1}, "duration": "600s",
}
METHODS = {m.name: (m.client_streaming, m.server_streaming) for m in v2.SERVICE.methods}
Code = pb.Code


def answers(ch: grpc.Channel, method: str, body: bytes, meta: tuple = CLIENT) -> list[Any]:
    """The responses to one message of ``method``, whatever its streaming kind."""
    client_streams, server_streams = METHODS[method]
    if client_streams:
        return telemetry(ch, body, meta)
    if server_streams:
        return server_stream(ch, method, body, meta)
    return [unary(ch, method, body, meta)]


def malformed_everywhere(ch: grpc.Channel) -> int:
    """Every method, each body its request type refuses: BAD_REQUEST, and a stream ends after it."""
    sent = 0
    for method in METHODS:
        for body in lib.malformed(method):
            got = answers(ch, method, body)
            assert got and got[0].status.code == Code.BAD_REQUEST, (method, body, got)
            sent += 1
    return sent


def unknown_and_anonymous(ch: grpc.Channel) -> None:
    for path in lib.UNKNOWN:
        for call in (ch.unary_unary(path), ch.stream_stream(path)):
            with pytest.raises(grpc.RpcError) as info:
                out = call(b"" if isinstance(call, grpc.UnaryUnaryMultiCallable) else iter([b""]), timeout=10)
                list(out) if not isinstance(out, bytes) else None
            assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED, (path, info.value)
    hello = pb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER)).SerializeToString()
    for meta in ((), (("x-mq-client-id", ""),), (("x-mq-language", "PYTHON"),)):
        [refused] = telemetry(ch, hello, meta)  # answered, then the stream ends
        assert refused.status.code == Code.CLIENT_ID_REQUIRED
        assert unary(ch, "Heartbeat", b"", meta).status.code == Code.CLIENT_ID_REQUIRED
    for method in METHODS:  # an empty, well-formed request without a client id: a status, never 0
        if method != "Telemetry":
            got = answers(ch, method, b"", ())
            assert got and got[0].HasField("status") and got[0].status.code != 0, (method, got)


def real_handle(ch: grpc.Channel) -> str:
    """The receipt handle of a message sent to A (broker-a only) and received by group G1."""
    for topic in ("T", "A", "R"):
        req = pb.QueryRouteRequest()
        req.topic.name = topic
        assert unary(ch, "QueryRoute", req).status.code == Code.OK
    m = pb.Message(body=b"leased")
    m.topic.name, m.system_properties.message_id, m.system_properties.message_type = "A", "HOSTILE-1", pb.NORMAL
    assert unary(ch, "SendMessage", pb.SendMessageRequest(messages=[m])).status.code == Code.OK
    req = pb.ReceiveMessageRequest(batch_size=1)
    req.group.name, req.message_queue.topic.name, req.message_queue.broker.name = "G1", "A", "broker-a"
    req.filter_expression.expression = "*"
    v2.set_duration(req.invisible_duration, 60_000)
    v2.set_duration(req.long_polling_timeout, 5_000)
    got = [r.message for r in server_stream(ch, "ReceiveMessage", req) if r.WhichOneof("content") == "message"]
    assert [x.system_properties.message_id for x in got] == ["HOSTILE-1"], got
    return got[0].system_properties.receipt_handle


def forge(ch: grpc.Channel, real: str) -> collections.Counter:
    """Acks and lease changes of forged handles, named with groups and topics not their own: each
    answered with a status (any code but a crash)."""
    seen: collections.Counter = collections.Counter()
    where = st.sampled_from([("A", "G2"), ("A", "%RETRY%G1"), ("T", "G2"), ("A", ""), ("nosuch", "G1")])
    seconds = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-5, 50_000))

    @settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(lib.forged_handles(real), where, seconds)
    def one(handle: str, place: tuple[str, str], secs: int) -> None:
        topic, group = place
        ack = pb.AckMessageRequest(entries=[pb.AckMessageEntry(message_id="HOSTILE-1", receipt_handle=handle)])
        ack.topic.name, ack.group.name = topic, group
        acked = unary(ch, "AckMessage", ack)
        assert acked.status.code != 0 and all(e.status.code != 0 for e in acked.entries), acked
        change = pb.ChangeInvisibleDurationRequest(receipt_handle=handle, message_id="HOSTILE-1")
        change.topic.name, change.group.name = topic, group
        change.invisible_duration.seconds = secs
        changed = unary(ch, "ChangeInvisibleDuration", change)
        assert changed.status.code != 0, changed
        seen[f"ack {acked.status.code}"] += 1
        seen[f"change {changed.status.code}"] += 1

    one()
    return seen


def too_large(ch: grpc.Channel) -> None:
    m = pb.Message(body=b"x" * (4 * 1024 * 1024 + 1))  # over maxMessageSize, under the port's limit
    m.topic.name, m.system_properties.message_id = "T", "HOSTILE-BIG"
    assert unary(ch, "SendMessage", pb.SendMessageRequest(messages=[m])).status.code == Code.MESSAGE_BODY_TOO_LARGE
    with pytest.raises(grpc.RpcError) as info:  # over the port's: refused before it is buffered
        ch.unary_unary("/apache.rocketmq.v2.MessagingService/SendMessage")(
            b"\x0a" + b"x" * (_grpc.MAX_MESSAGE_BYTES + 16), timeout=10, metadata=CLIENT)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def established_to(port: int) -> int:
    return sum(1 for c in psutil.Process().net_connections("tcp")
               if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED)


def test_hostile_grpc_input_ends_only_its_own_call(start_cluster) -> None:
    started = time.monotonic()
    c = start_cluster(TOPO)
    addr = c.endpoints
    assert addr is not None and ";" not in addr
    port = int(addr.rpartition(":")[2])
    took: dict[str, float] = {"start": time.monotonic() - started}

    def lap(name: str) -> None:
        took[name] = round(time.monotonic() - started - sum(took.values()), 2)

    with grpc.insecure_channel(addr) as ch:
        bad = malformed_everywhere(ch)
        unknown_and_anonymous(ch)
        lap("malformed+unknown")
        forged = forge(ch, real_handle(ch))
        lap("forged")
        too_large(ch)
        code, details, written = lib.flood_telemetry(ch)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details, written)  # the rate, or the node behind
        lap("flood")
        for data in lib.NOT_GRPC:
            lib.send_raw(addr, data)
        lap("not grpc")

        def normal_call() -> tuple[int, int, float]:
            t0 = time.monotonic()
            req = pb.QueryRouteRequest()
            req.topic.name = "T"
            status = unary(ch, "QueryRoute", req).status.code
            return status, established_to(port), (time.monotonic() - t0) * 1000

        answered, (status, conns, call_ms), held_s = lib.held_telemetry_streams(addr, 1000, normal_call)
        assert answered == 1000 and conns >= 1000 and status == Code.OK, (answered, conns, status)
        lap("held")

    c.launcher.check()
    assert all(p.alive() for p in c.launcher.procs.values()), {n: p.exit_info() for n, p in c.launcher.procs.items()}
    assert {n for n in c.launcher.procs if "_runtime" in c.state(n)} == set(c.launcher.procs)
    assert not c.events("node.error"), c.events("node.error")[:3]
    proxy = c.state("proxy-0")
    assert proxy["bad_requests"] >= bad and proxy["_runtime"]["transport"]["grpc_refused"] >= 1, proxy

    home = c.run_dir / "py5-home"
    home.mkdir()
    sent = py5client.run_script("producer.py", {"endpoints": addr, "topic": "R", "count": 3}, 30, home)
    ids = [x["message_id"] for x in sent.events("sent") if x["ok"]]
    assert sent.returncode == 0 and len(ids) == 3, (sent.lines, sent.stderr)
    got = py5client.run_script("simple_consumer.py", {"endpoints": addr, "topic": "R", "group": "GR", "count": 3,
                                                      "await_s": 1, "invisible_s": 10, "duration_s": 15}, 30, home)
    assert sorted(x["message_id"] for x in got.events("ack") if x["ok"]) == sorted(ids), (got.lines, got.stderr)
    lap("real client")
    print(f"\nhostile gRPC: {bad} malformed, forged {dict(forged)}, flood cut after {written} messages "
          f"({details}), a call beside 1000 streams {call_ms:.1f} ms, seconds {took}")
