"""The gRPC port of a node's transport, with real sockets: a real grpcio client in this process
calls MessagingService's methods with raw bytes (identity serializers), and the test thread polls
the transport as a node's loop does and answers as a role would.

Each test owns its transport (port 0) and its client channels and closes them; waits poll for a
condition until a deadline.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Callable, Iterator

import grpc
import pytest

from rmqemu.emulator.node.links import LinkRule
from rmqemu.emulator.protocol import ChannelEvent, EmulatorCode, Flag, Frame
from rmqemu.emulator.roles.proxy import messaging_v2_pb2
from rmqemu.emulator.transport import _grpc
from rmqemu.emulator.transport.base import Received, TransportEvent
from rmqemu.emulator.transport.zmq_node import ZmqTransport

DEADLINE_S = 30.0
ME = f"client@{os.getpid()}"
SERVICE = messaging_v2_pb2.DESCRIPTOR.services_by_name["MessagingService"]
PATH = "/apache.rocketmq.v2.MessagingService/"
META = (("x-mq-client-id", "cid-1"), ("x-mq-language", "PYTHON"), ("x-mq-client-version", "5.1.2"),
        ("x-mq-namespace", "ns"))


def new_node(name: str = "proxy-0", **kw: object) -> ZmqTransport:
    return ZmqTransport(name, idle_ms=60000, grpc=("127.0.0.1", 0), grpc_service=SERVICE, **kw)  # type: ignore[arg-type]


@pytest.fixture
def node() -> Iterator[ZmqTransport]:
    t = new_node()
    try:
        yield t
    finally:
        t.close()


@pytest.fixture
def channel(node: ZmqTransport) -> Iterator[grpc.Channel]:
    ch = grpc.insecure_channel(node.grpc_address)
    try:
        yield ch
    finally:
        ch.close()


def wait_for(t: ZmqTransport, seen: list[TransportEvent], pred: Callable[[TransportEvent], bool],
             what: str, deadline_s: float = DEADLINE_S) -> TransportEvent:
    deadline = time.monotonic() + deadline_s
    while True:
        for ev in seen:
            if pred(ev):
                seen.remove(ev)
                return ev
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}; saw {seen[:20]}")
        seen += t.poll(5)


def poll_until(t: ZmqTransport, cond: Callable[[], bool], what: str, seen: list | None = None) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        events = t.poll(5)
        if seen is not None:
            seen += events


def msg(method: str | None = None) -> Callable[[TransportEvent], bool]:
    return lambda e: isinstance(e, Received) and (method is None or e.frame.fields["method"] == method)


def closed(channel: str) -> Callable[[TransportEvent], bool]:
    return lambda e: isinstance(e, ChannelEvent) and e.kind == "closed" and e.channel == channel


def reply(body: bytes, **fields: object) -> Frame:
    return Frame(code=EmulatorCode.GRPC, flag=Flag.RESPONSE, body=body, fields=dict(fields))


def test_a_unary_call_arrives_as_a_frame_of_its_channel_and_its_answer_ends_it(node, channel) -> None:
    assert node.grpc_address.startswith("127.0.0.1:") and node.grpc_address != "127.0.0.1:0"
    future = channel.unary_unary(PATH + "SendMessage").future(b"\x0a\x00raw", metadata=META, timeout=DEADLINE_S)
    seen: list[TransportEvent] = []
    ev = wait_for(node, seen, msg("SendMessage"), "the request")
    assert ev.channel.startswith("grpc:") and ev.peer == ME and not ev.outbound
    assert ev.frame.code == 90100 and ev.frame.flag == Flag.REQUEST and ev.frame.opaque == 1
    assert ev.frame.body == b"\x0a\x00raw"
    assert ev.frame.fields == {"method": "SendMessage", "client_id": "cid-1", "language": "PYTHON",
                               "version": "5.1.2", "namespace": "ns"}
    host, port = ev.addr.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert node.stats()["grpc_clients"] == {ev.channel: ME}
    assert node.send_to_channel(ev.channel, reply(b"\x00answer"))
    assert future.result() == b"\x00answer"
    assert not node.send_to_channel(ev.channel, reply(b"again"))  # a unary call takes one answer
    poll_until(node, lambda: node.stats()["grpc_open"] == 0, "the call's end")
    assert not [e for e in seen if isinstance(e, ChannelEvent)]  # the role ended it: no closed event
    # no metadata: only the method
    future = channel.unary_unary(PATH + "QueryRoute").future(b"", timeout=DEADLINE_S)
    ev = wait_for(node, seen, msg("QueryRoute"), "the bare request")
    assert ev.frame.fields == {"method": "QueryRoute"} and ev.frame.body == b""
    node.send_to_channel(ev.channel, reply(b""))
    assert future.result() == b""


def test_a_server_stream_sends_each_answer_until_one_ends_it(node, channel) -> None:
    responses = channel.unary_stream(PATH + "ReceiveMessage")(b"req", metadata=META, timeout=DEADLINE_S)
    ev = wait_for(node, [], msg("ReceiveMessage"), "the receive")
    for i in range(5):
        assert node.send_to_channel(ev.channel, reply(b"m%d" % i))
    assert node.send_to_channel(ev.channel, reply(b"last", end=True))
    assert not node.send_to_channel(ev.channel, reply(b"late"))
    done = threading.Event()
    got: list[bytes] = []
    threading.Thread(target=lambda: (got.extend(responses), done.set()), daemon=True).start()
    poll_until(node, done.is_set, "the end of the stream")
    assert got == [b"m0", b"m1", b"m2", b"m3", b"m4", b"last"] and responses.code() == grpc.StatusCode.OK
    # an end without a body ends it without another message
    responses = channel.unary_stream(PATH + "ReceiveMessage")(b"req", timeout=DEADLINE_S)
    ev = wait_for(node, [], msg("ReceiveMessage"), "the second receive")
    node.send_to_channel(ev.channel, reply(b"only"))
    node.send_to_channel(ev.channel, reply(b"", end=True))
    node.poll(0)
    assert list(responses) == [b"only"] and responses.code() == grpc.StatusCode.OK


class Writer:
    """A client stream's request iterator that the test feeds (``None`` half-closes it)."""

    def __init__(self) -> None:
        self.items: list[bytes | None] = []
        self.cond = threading.Condition()

    def put(self, item: bytes | None) -> None:
        with self.cond:
            self.items.append(item)
            self.cond.notify()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.items)
                item = self.items.pop(0)
            if item is None:
                return
            yield item


def test_a_bidi_stream_numbers_the_clients_messages_and_the_server_pushes_at_will(node, channel) -> None:
    writer = Writer()
    stream = channel.stream_stream(PATH + "Telemetry")(iter(writer), metadata=META, timeout=DEADLINE_S)
    writer.put(b"settings")
    seen: list[TransportEvent] = []
    first = wait_for(node, seen, msg("Telemetry"), "the settings")
    assert first.frame.opaque == 1 and first.frame.body == b"settings" and first.frame.fields["client_id"] == "cid-1"
    assert node.send_to_channel(first.channel, reply(b"merged settings"))
    assert next(stream) == b"merged settings"
    assert node.send_to_channel(first.channel, reply(b"recover orphaned transaction"))  # unprompted
    assert next(stream) == b"recover orphaned transaction"
    writer.put(b"thread stack trace")
    second = wait_for(node, seen, msg("Telemetry"), "the second message")
    assert (second.channel, second.frame.opaque) == (first.channel, 2)
    node.close_channel(first.channel)  # the role ends the stream: status OK, then its closed event
    assert list(stream) == [] and stream.code() == grpc.StatusCode.OK
    wait_for(node, seen, closed(first.channel), "the closed event of a stream the role closed")
    assert not node.send_to_channel(first.channel, reply(b"x"))
    writer.put(None)


def test_a_client_that_half_closes_or_cancels_ends_its_call_and_the_role_hears_of_it(node, channel) -> None:
    writer = Writer()
    stream = channel.stream_stream(PATH + "Telemetry")(iter(writer), timeout=DEADLINE_S)
    writer.put(b"hello")
    seen: list[TransportEvent] = []
    ev = wait_for(node, seen, msg("Telemetry"), "the stream's message")
    writer.put(None)  # half-close
    wait_for(node, seen, closed(ev.channel), "the closed event of a half-closed stream")
    assert not node.send_to_channel(ev.channel, reply(b"x"))
    assert list(stream) == [] and stream.code() == grpc.StatusCode.OK
    future = channel.unary_unary(PATH + "AckMessage").future(b"ack", timeout=DEADLINE_S)
    ev = wait_for(node, seen, msg("AckMessage"), "the ack")
    future.cancel()
    gone = wait_for(node, seen, closed(ev.channel), "the closed event of a cancelled call")
    assert gone.peer == ME and not node.send_to_channel(ev.channel, reply(b"too late"))
    future = channel.unary_unary(PATH + "AckMessage").future(b"ack", timeout=0.3)  # the deadline passes
    ev = wait_for(node, seen, msg("AckMessage"), "the second ack")
    wait_for(node, seen, closed(ev.channel), "the closed event of a call past its deadline")
    assert future.exception().code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_an_unknown_method_is_unimplemented_and_never_reaches_the_role(node, channel) -> None:
    for path in (PATH + "NoSuchRpc", "/apache.rocketmq.v1.MessagingService/SendMessage", "/x/y"):
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary(path)(b"", timeout=DEADLINE_S)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert [e for e in node.poll(20) if isinstance(e, Received)] == []


def test_a_too_large_message_is_refused_and_the_port_keeps_serving(node, channel) -> None:
    with pytest.raises(grpc.RpcError) as info:
        channel.unary_unary(PATH + "SendMessage")(b"x" * (_grpc.MAX_MESSAGE_BYTES + 1), timeout=DEADLINE_S)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    future = channel.unary_unary(PATH + "SendMessage").future(b"y" * _grpc.MAX_MESSAGE_BYTES, timeout=DEADLINE_S)
    ev = wait_for(node, [], msg("SendMessage"), "the largest message allowed")
    assert len(ev.frame.body) == _grpc.MAX_MESSAGE_BYTES
    node.send_to_channel(ev.channel, reply(b"ok"))
    assert future.result() == b"ok"


def flood(ch: grpc.Channel, size: int) -> grpc.Future:
    """A Telemetry stream that writes ``size``-byte messages for as long as the call lasts."""
    def endless() -> Iterator[bytes]:
        while True:
            yield b"f" * size
    return ch.stream_stream(PATH + "Telemetry")(endless(), timeout=DEADLINE_S)


def test_an_endless_stream_the_node_does_not_keep_up_with_is_cut_off_with_memory_bounded(node, channel) -> None:
    stream = flood(channel, 64 * 1024)  # the node takes nothing until the cut: 16 MiB is 256 messages
    port = node.grpc
    deadline = time.monotonic() + DEADLINE_S
    while not port.stats()["grpc_refused"]:
        assert time.monotonic() < deadline, "the flood was never cut off"
        assert port.handed_bytes - port.calls.taken_bytes <= _grpc.MAX_PENDING_IN_BYTES
        time.sleep(0.005)
    pending = port.handed_bytes - port.calls.taken_bytes
    assert pending <= _grpc.MAX_PENDING_IN_BYTES and len(port.mailbox.items) <= _grpc.MAX_PENDING_IN_MSGS + 1
    with pytest.raises(grpc.RpcError) as info:
        list(stream)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    seen: list[TransportEvent] = []
    poll_until(node, lambda: any(closed(e.channel)(e) for e in seen if isinstance(e, ChannelEvent)),
               "the flood's closed event", seen)
    taken = [e for e in seen if isinstance(e, Received)]
    assert 0 < len(taken) <= _grpc.MAX_PENDING_IN_MSGS and port.handed_bytes == port.calls.taken_bytes
    future = channel.unary_unary(PATH + "Heartbeat").future(b"hb", timeout=DEADLINE_S)
    ev = wait_for(node, seen, msg("Heartbeat"), "a call after the flood")
    node.send_to_channel(ev.channel, reply(b"ok"))
    assert future.result() == b"ok"


def test_an_endless_stream_the_node_keeps_up_with_is_cut_off_by_its_rate(node, channel) -> None:
    stream = flood(channel, 16)
    seen: list[TransportEvent] = []
    started = time.monotonic()
    poll_until(node, lambda: node.stats()["grpc_refused"] == 1, "the rate cut", seen)
    with pytest.raises(grpc.RpcError) as info:
        list(stream)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "a second" in info.value.details()
    took = time.monotonic() - started
    taken = len([e for e in seen if isinstance(e, Received)])
    assert taken <= _grpc.STREAM_BURST + _grpc.STREAM_RATE * took + 1


def test_a_thousand_connections_each_with_a_stream_and_then_a_call_still_works(node) -> None:
    import psutil
    n = 1000
    port = int(node.grpc_address.rsplit(":", 1)[1])
    channels = [grpc.insecure_channel(node.grpc_address, options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range(n)]
    try:
        streams = [ch.unary_stream(PATH + "ReceiveMessage")(b"poll %d" % i, timeout=120)
                   for i, ch in enumerate(channels)]
        seen: list[TransportEvent] = []
        got: dict[str, Received] = {}
        started = time.monotonic()
        while len(got) < n:
            assert time.monotonic() - started < 90, f"only {len(got)} of {n} streams arrived"
            for e in node.poll(5):
                if isinstance(e, Received):
                    got[e.channel] = e
                else:
                    seen.append(e)
        arrived_s = time.monotonic() - started
        conns = [c for c in psutil.Process().net_connections("tcp")
                 if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED]
        assert len(conns) >= n, f"{len(conns)} connections"
        assert node.stats()["grpc_open"] == n
        extra = grpc.insecure_channel(node.grpc_address)
        future = extra.unary_unary(PATH + "QueryRoute").future(b"route", timeout=DEADLINE_S)
        t0 = time.monotonic()
        ev = wait_for(node, seen, msg("QueryRoute"), "a call beside a thousand streams")
        node.send_to_channel(ev.channel, reply(b"route"))
        assert future.result() == b"route"
        call_ms = (time.monotonic() - t0) * 1000
        answered = {int(e.frame.body.split()[1]) for e in list(got.values())[:10]}  # a few streams answered, too
        for ev in list(got.values())[:10]:
            node.send_to_channel(ev.channel, reply(b"m", end=True))
        node.poll(0)
        for i in answered:
            assert list(streams[i]) == [b"m"] and streams[i].code() == grpc.StatusCode.OK
        t0 = time.monotonic()
        node.close()  # the thousand others end with the port
        close_s = time.monotonic() - t0
        extra.close()
        print(f"\n{n} streams arrived in {arrived_s:.2f} s; a call beside them {call_ms:.1f} ms; close {close_s:.2f} s")
        assert close_s < 5
        assert {streams[i].code() for i in range(n) if i not in answered} == {grpc.StatusCode.UNAVAILABLE}
    finally:
        for ch in channels:
            ch.close()


def test_calls_beyond_the_cap_are_refused_and_served_again_once_one_ends(monkeypatch) -> None:
    monkeypatch.setattr(_grpc, "MAX_CALLS", 3)
    t = new_node()
    ch = grpc.insecure_channel(t.grpc_address)
    try:
        seen: list[TransportEvent] = []
        held = [ch.unary_stream(PATH + "ReceiveMessage")(b"%d" % i, timeout=DEADLINE_S) for i in range(3)]
        evs = [wait_for(t, seen, msg("ReceiveMessage"), "a held stream") for _ in held]
        with pytest.raises(grpc.RpcError) as info:
            ch.unary_unary(PATH + "Heartbeat")(b"hb", timeout=DEADLINE_S)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        t.send_to_channel(evs[0].channel, reply(b"", end=True))
        t.poll(0)
        assert list(held[int(evs[0].frame.body)]) == []
        future = ch.unary_unary(PATH + "Heartbeat").future(b"hb", timeout=DEADLINE_S)
        ev = wait_for(t, seen, msg("Heartbeat"), "a call once one has ended")
        t.send_to_channel(ev.channel, reply(b"ok"))
        assert future.result() == b"ok"
    finally:
        ch.close()
        t.close()


def test_answers_a_client_does_not_read_end_its_call_not_the_node(monkeypatch, node, channel) -> None:
    monkeypatch.setattr(_grpc, "MAX_PENDING_OUT_BYTES", 1024 * 1024)
    unread = channel.unary_stream(PATH + "ReceiveMessage")(b"never read", timeout=DEADLINE_S)
    seen: list[TransportEvent] = []
    ev = wait_for(node, seen, msg("ReceiveMessage"), "the stream")
    chunk, sent = b"z" * 256 * 1024, 0
    deadline = time.monotonic() + DEADLINE_S
    while node.send_to_channel(ev.channel, reply(chunk)):
        sent += 1
        assert time.monotonic() < deadline, f"{sent} answers of 256 KiB all accepted"
        seen += node.poll(1)
    wait_for(node, seen, closed(ev.channel), "the closed event of the call that did not read")
    assert node.stats()["grpc_refused"] == 1
    with pytest.raises(grpc.RpcError) as info:
        list(unread)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    future = channel.unary_unary(PATH + "Heartbeat").future(b"hb", timeout=DEADLINE_S)
    ev = wait_for(node, seen, msg("Heartbeat"), "a call afterwards")
    node.send_to_channel(ev.channel, reply(b"ok"))
    assert future.result() == b"ok"


def test_a_connection_without_calls_is_closed_after_the_idle_time() -> None:
    import psutil
    t = ZmqTransport("proxy-0", idle_ms=300, grpc=("127.0.0.1", 0), grpc_service=SERVICE)
    ch = grpc.insecure_channel(t.grpc_address)
    port = int(t.grpc_address.rsplit(":", 1)[1])

    def conns() -> int:
        return sum(1 for c in psutil.Process().net_connections("tcp")
                   if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED)
    try:
        future = ch.unary_unary(PATH + "Heartbeat").future(b"hb", timeout=DEADLINE_S)
        ev = wait_for(t, [], msg("Heartbeat"), "the heartbeat")
        t.send_to_channel(ev.channel, reply(b"ok"))
        assert future.result() == b"ok" and conns() == 1
        poll_until(t, lambda: conns() == 0, "the idle connection's close (grpc.max_connection_idle_ms)")
    finally:
        ch.close()
        t.close()


def test_a_link_block_from_the_client_drops_its_messages_and_one_to_it_drops_answers(node, channel) -> None:
    node.set_links({(ME, "proxy-0"): LinkRule(blocked=True)}, {})
    future = channel.unary_unary(PATH + "SendMessage").future(b"lost", timeout=0.5)
    seen: list[TransportEvent] = []
    poll_until(node, future.done, "the blocked call's deadline", seen)
    assert future.exception().code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert not [e for e in seen if isinstance(e, Received)] and node.stats()["dropped_in"] == 1
    node.set_links({("proxy-0", ME): LinkRule(blocked=True)}, {})
    future = channel.unary_unary(PATH + "SendMessage").future(b"kept", timeout=DEADLINE_S)
    ev = wait_for(node, seen, msg("SendMessage"), "the message once the client's side heals")
    assert node.send_to_channel(ev.channel, reply(b"dropped"))  # accepted, dropped on the way
    assert node.stats()["dropped_out"] == 1 and not future.done()
    node.set_links({}, {})
    assert node.send_to_channel(ev.channel, reply(b"delivered"))
    assert future.result() == b"delivered"


def test_a_link_delay_holds_messages_back_and_duplication_doubles_them(node, channel) -> None:
    node.set_links({(ME, "proxy-0"): LinkRule(delay_ms=300, duplicate=1.0)}, {})
    future = channel.unary_unary(PATH + "Heartbeat").future(b"hb", timeout=DEADLINE_S)
    seen: list[TransportEvent] = []
    t0 = time.monotonic()
    first = wait_for(node, seen, msg("Heartbeat"), "the delayed heartbeat")
    assert time.monotonic() - t0 >= 0.29
    second = wait_for(node, seen, msg("Heartbeat"), "its copy")
    assert (first.channel, first.frame.opaque) == (second.channel, second.frame.opaque)
    node.send_to_channel(first.channel, reply(b"ok"))
    assert future.result() == b"ok"


def test_garbage_on_the_port_hurts_nothing(node, channel) -> None:
    host, port = node.grpc_address.rsplit(":", 1)
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    junk = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x00" * 4096, os.urandom(65536),
            preface + b"\x00\x00\x12\x04\x00\x00\x00\x00\x00" + os.urandom(18),  # a SETTINGS of bad length
            preface + b"\xff\xff\xff\x00\x01\x00\x00\x00\x01" + os.urandom(1000),  # a frame far over the max
            preface[:10]]  # half a preface, then silence
    socks = []
    for data in junk:
        s = socket.create_connection((host, int(port)), timeout=DEADLINE_S)
        s.sendall(data)
        socks.append(s)
    future = channel.unary_unary(PATH + "QueryRoute").future(b"route", timeout=DEADLINE_S)
    ev = wait_for(node, [], msg("QueryRoute"), "a call beside the garbage")
    node.send_to_channel(ev.channel, reply(b"fine"))
    assert future.result() == b"fine"
    for s in socks:
        s.close()


def test_close_leaves_no_thread_and_frees_the_port() -> None:
    before = {t.ident for t in threading.enumerate()}
    t = new_node()
    addr = t.grpc_address
    ch = grpc.insecure_channel(addr)
    try:
        responses = ch.unary_stream(PATH + "ReceiveMessage")(b"hold", timeout=DEADLINE_S)
        wait_for(t, [], msg("ReceiveMessage"), "an open stream")
    finally:
        started = time.monotonic()
        t.close()
        took = time.monotonic() - started
    with pytest.raises(grpc.RpcError):
        list(responses)
    ch.close()
    assert took < 2.0
    deadline = time.monotonic() + DEADLINE_S
    while {th.ident for th in threading.enumerate()} - before:
        assert time.monotonic() < deadline, f"threads left: {threading.enumerate()}"
        time.sleep(0.01)
    host, port = addr.rsplit(":", 1)
    with socket.create_server((host, int(port))):  # no SO_REUSEPORT sharing: the port is really free
        pass
    again = ZmqTransport("proxy-0", grpc=(host, int(port)), grpc_service=SERVICE)  # a restart binds it again
    try:
        assert again.grpc_address == addr
    finally:
        again.close()


def test_a_taken_port_is_one_clear_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        before = threading.active_count()
        with pytest.raises(OSError, match=f"cannot serve gRPC on 127.0.0.1:{port}"):
            ZmqTransport("proxy-0", grpc=("127.0.0.1", port), grpc_service=SERVICE)
    deadline = time.monotonic() + DEADLINE_S
    while threading.active_count() > before:
        assert time.monotonic() < deadline, threading.enumerate()
        time.sleep(0.01)


def test_the_peer_address_grpc_gives_is_parsed() -> None:
    assert _grpc.peer_address("ipv4:127.0.0.1:5555") == ("127.0.0.1", 5555)
    assert _grpc.peer_address("ipv6:%5B::1%5D:5555") == ("::1", 5555)
    assert _grpc.peer_address("unix:/tmp/x") == ("", 0)
    assert _grpc.methods_of(SERVICE)["Telemetry"] == (True, True)
    assert _grpc.methods_of(SERVICE)["ReceiveMessage"] == (False, True)
    assert _grpc.methods_of(SERVICE)["SendMessage"] == (False, False)


def test_the_fake_transport_delivers_and_ends_grpc_calls_as_the_port_does() -> None:
    from rmqemu.emulator.transport.fake import FakeTransport
    t = FakeTransport(grpc_addr="127.0.0.1:8081")
    assert t.grpc_address == "127.0.0.1:8081"
    unary = t.grpc_call("SendMessage", b"req", client_id="cid-1")
    stream = t.grpc_call("Telemetry", b"settings", streaming=True, client_id="cid-1")
    (first, second) = t.poll(0)
    assert (first.channel, first.frame.code, first.frame.opaque, first.frame.fields) == (
        unary, 90100, 1, {"method": "SendMessage", "client_id": "cid-1"})
    assert second.channel == stream and unary != stream
    assert t.send_to_channel(unary, reply(b"ok")) and not t.send_to_channel(unary, reply(b"twice"))
    assert t.send_to_channel(stream, reply(b"a")) and t.send_to_channel(stream, reply(b"b", end=True))
    assert not t.send_to_channel(stream, reply(b"c"))
    assert [f.body for f in t.grpc_replies(stream)] == [b"a", b"b"]
    other = t.grpc_call("Telemetry", streaming=True)
    t.grpc_client_closed(other)
    assert t.poll(0)[-1] == ChannelEvent(kind="closed", channel=other, peer="client@4242")
    assert not t.send_to_channel(other, reply(b"x"))
