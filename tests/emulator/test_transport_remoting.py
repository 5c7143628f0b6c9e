"""The remoting port of a node's transport, with real TCP sockets: a client in this process speaks
RocketMQ's framing to it (the codec's own tests are test_remoting_codec.py).

Each test owns its transport (random ports) and closes it; waits poll for a condition.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Callable, Iterator

import pytest

from rmqemu.emulator.node.links import LinkRule
from rmqemu.emulator.protocol import ChannelEvent, Flag, Frame, remoting
from rmqemu.emulator.transport import _client_names, _remoting
from rmqemu.emulator.transport.base import BadInput, Received, TransportEvent
from rmqemu.emulator.transport.zmq_node import ZmqTransport

DEADLINE_S = 20.0
ME = f"client@{os.getpid()}"


class Client:
    """A blocking RocketMQ remoting client socket."""

    def __init__(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=DEADLINE_S)
        self.decoder = remoting.StreamDecoder()
        self.frames: list[Frame] = []

    def send(self, frame: Frame) -> None:
        self.sock.sendall(remoting.encode(frame))

    def recv(self) -> Frame:
        while not self.frames:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by the node")
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0)

    def closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(65536) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def node() -> Iterator[ZmqTransport]:
    t = ZmqTransport("broker-a-0", idle_ms=60000, remoting=("127.0.0.1", 0))
    yield t
    t.close()


def wait_for(t: ZmqTransport, seen: list[TransportEvent], pred: Callable[[TransportEvent], bool],
             what: str) -> TransportEvent:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        for ev in seen:
            if pred(ev):
                return ev
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}; saw {seen}")
        seen += t.poll(5)


def received(code: int) -> Callable[[TransportEvent], bool]:
    return lambda e: isinstance(e, Received) and e.frame.code == code


def test_a_request_arrives_as_a_channel_of_the_named_client_and_the_answer_goes_back(node) -> None:
    assert node.remoting_address.startswith("127.0.0.1:")
    c = Client(node.remoting_address)
    c.send(Frame(105, opaque=7, fields={"topic": "T", "n": 3, "b": True}))
    seen: list[TransportEvent] = []
    ev = wait_for(node, seen, received(105), "the route request")
    assert ev.channel.startswith("rm:") and ev.peer == ME and not ev.outbound
    assert ev.addr == "127.0.0.1:%d" % c.sock.getsockname()[1]  # its socket: the messages' bornHost
    assert ev.frame.fields == {"topic": "T", "n": "3", "b": "true"} and ev.frame.opaque == 7  # as Java sends
    assert node.stats()["remoting_clients"] == {ev.channel: ME}
    assert node.send_to_channel(ev.channel, ev.frame.response(0, fields={"x": 1}, body=b"\x00\xffraw"))
    answer = c.recv()
    assert (answer.code, answer.opaque, answer.flag, answer.fields, answer.body) == (0, 7, Flag.RESPONSE,
                                                                                     {"x": "1"}, b"\x00\xffraw")
    c.close()
    wait_for(node, seen, lambda e: isinstance(e, ChannelEvent) and e.kind == "closed" and e.channel == ev.channel,
             "the close of the client's channel")
    assert not node.send_to_channel(ev.channel, ev.frame.response(0))


def test_send_v2_short_header_names_arrive_long(node) -> None:
    c = Client(node.remoting_address)
    c.send(Frame(310, opaque=1, fields={"a": "PG", "b": "T", "e": "2", "i": "KEYS\x01k\x02"}, body=b"hi"))
    ev = wait_for(node, [], received(310), "the send")
    assert ev.frame.fields["producerGroup"] == "PG" and ev.frame.fields["topic"] == "T"
    assert ev.frame.fields["queueId"] == "2" and ev.frame.body == b"hi"
    c.close()


def test_a_bad_frame_closes_its_own_connection_only(node) -> None:
    good, bad = Client(node.remoting_address), Client(node.remoting_address)
    bad.sock.sendall((1 << 30).to_bytes(4, "big"))  # a gigabyte announced: refused before buffering
    seen: list[TransportEvent] = []
    ev = wait_for(node, seen, lambda e: isinstance(e, BadInput), "the bad frame's report")
    assert ev.peer == ME and "limit" in ev.reason
    assert bad.closed_by_peer()
    good.send(Frame(105, opaque=2, fields={"topic": "T"}))
    req = wait_for(node, seen, received(105), "the good client's request")
    node.send_to_channel(req.channel, req.frame.response(17))
    assert good.recv().code == 17
    good.close()
    bad.close()


def test_a_client_that_stops_mid_frame_is_closed_as_idle() -> None:
    t = ZmqTransport("namesrv-0", idle_ms=300, remoting=("127.0.0.1", 0))
    try:
        c = Client(t.remoting_address)
        c.sock.sendall(remoting.encode(Frame(105, opaque=1))[:7])
        ev = wait_for(t, [], lambda e: isinstance(e, ChannelEvent) and e.kind == "idle", "the idle close")
        assert ev.peer == ME and c.closed_by_peer()
        assert t.stats()["idle_closed"] == 1
    finally:
        t.close()


def test_a_link_fault_from_the_client_drops_its_frames_and_one_to_it_drops_answers(node) -> None:
    c = Client(node.remoting_address)
    c.send(Frame(105, opaque=1))
    seen: list[TransportEvent] = []
    ev = wait_for(node, seen, received(105), "the first request")
    node.set_links({(ME, "broker-a-0"): LinkRule(blocked=True)}, {})
    c.send(Frame(34, opaque=2))
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        seen += node.poll(5)
    assert not [e for e in seen if isinstance(e, Received) and e.frame.code == 34]
    assert node.stats()["dropped_in"] >= 1
    node.set_links({("broker-a-0", ME): LinkRule(blocked=True)}, {})
    assert node.send_to_channel(ev.channel, ev.frame.response(0))  # accepted, dropped on the way
    assert node.stats()["dropped_out"] == 1
    node.set_links({}, {})
    node.send_to_channel(ev.channel, ev.frame.response(1))
    assert c.recv().code == 1
    c.close()


def test_connections_beyond_the_limit_are_refused(node, monkeypatch) -> None:
    monkeypatch.setattr(_remoting, "MAX_CONNS", 2)
    clients = [Client(node.remoting_address) for _ in range(3)]
    seen: list[TransportEvent] = []
    wait_for(node, seen, lambda e: node.stats()["remoting_refused"] == 1, "the third connection refused")
    assert sum(c.closed_by_peer() for c in clients[2:]) == 1
    assert len(node.stats()["remoting_clients"]) == 2
    for c in clients:
        c.close()


def test_a_restarted_node_binds_the_same_remoting_port() -> None:
    t = ZmqTransport("broker-b-0", remoting=("127.0.0.1", 0))
    addr = t.remoting_address
    c = Client(addr)
    t.poll(5)
    t.close()
    host, _, port = addr.rpartition(":")
    again = ZmqTransport("broker-b-0", remoting=(host, int(port)))  # SO_REUSEADDR: no wait for TIME_WAIT
    try:
        assert again.remoting_address == addr
    finally:
        c.close()
        again.close()


def test_a_taken_port_is_one_clear_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"real clients on 127.0.0.1:{port}: Address already in use"):
            ZmqTransport("broker-b-0", remoting=("127.0.0.1", port))


def test_client_name_of_a_local_socket_is_its_process() -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    c = socket.create_connection(srv.getsockname())
    conn, peer = srv.accept()
    try:
        namer = _client_names.ClientNamer()
        assert namer(peer, conn.getsockname()) == ME
        assert namer(("10.1.2.3", 5555), conn.getsockname()) == "client@10.1.2.3"
    finally:
        for s in (c, conn, srv):
            s.close()


def test_client_name_is_the_process_at_the_other_end() -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(30)  # a child that never connects fails the test instead of hanging it
    child = subprocess.Popen([sys.executable, "-c", "import socket, sys; s = socket.create_connection("
                              f"('127.0.0.1', {srv.getsockname()[1]})); sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        conn, peer = srv.accept()
        with conn:
            assert _client_names.ClientNamer()(peer, conn.getsockname()) == f"client@{child.pid}"
            assert _client_names.socket_inode(("127.0.0.1", 1), conn.getsockname()) is None  # no such socket
    finally:
        child.communicate(b"")
        srv.close()


def test_owner_lookups_are_budgeted_in_time() -> None:
    now = [0.0]
    asked: list[tuple[int, list[int]]] = []

    def lookup(peer: tuple[str, int], server: tuple[str, int], first: list[int]) -> int | None:
        asked.append((peer[1], list(first)))
        now[0] += 0.03  # each lookup takes 30 ms
        return 40 + peer[1] % 2 if peer[1] < 9000 else None
    namer = _client_names.ClientNamer(clock=lambda: now[0], lookup=lookup)
    server = ("127.0.0.1", 10911)
    assert namer(("127.0.0.1", 5001), server) == "client@41" and namer(("127.0.0.1", 5002), server) == "client@40"
    assert asked[-1][1] == [41]  # the owner of the last connection is asked first
    assert namer(("127.0.0.1", 9001), server) == "client@127.0.0.1"  # nobody found
    for i in range(40):  # a flood: lookups stop once 100 ms are spent
        namer(("127.0.0.1", 5003 + i), server)
    assert len(asked) == 4
    assert namer(("127.0.0.1", 5001), server) == "client@127.0.0.1"
    now[0] += 1.0  # 5% of a second (50 ms) comes back: one more lookup
    assert namer(("127.0.0.1", 5001), server) == "client@41" and len(asked) == 5


def test_a_link_fault_on_what_the_client_sends_is_applied_on_arrival(node) -> None:
    c = Client(node.remoting_address)
    node.set_links({(ME, "broker-a-0"): LinkRule(delay_ms=300, duplicate=1.0)}, {})
    sent = time.monotonic()
    c.send(Frame(105, opaque=5))
    seen: list[TransportEvent] = []
    wait_for(node, seen, lambda e: len([x for x in seen if isinstance(x, Received)]) == 2, "two copies")
    assert time.monotonic() - sent >= 0.3  # held for the delay, then handed on twice
    assert node.stats()["delayed"] == 1 and node.stats()["duplicated"] == 1
    c.close()
