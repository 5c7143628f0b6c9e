"""The ZeroMQ transport with real sockets on loopback: channels, closes, idle, link faults, one-shot
requests (the control plane: test_transport_control.py).

Each test makes its own transports on random ports and closes them; waits poll for a condition
with a generous deadline.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

import pytest
import zmq

from rmqemu.emulator.node.links import LinkRule
from rmqemu.emulator.protocol import ChannelEvent, Flag, Frame, request
from rmqemu.emulator.transport.base import (
    BadInput,
    Received,
    SendFailed,
    TransportEvent,
    out_channel,
)
from rmqemu.emulator.transport.oneshot import RequestFailed, request_once
from rmqemu.emulator.transport.zmq_node import ZmqTransport

DEADLINE_S = 20.0


class Net:
    """Transports of one test and the events each has produced so far."""

    def __init__(self) -> None:
        self.nodes: dict[str, ZmqTransport] = {}
        self.seen: dict[str, list[TransportEvent]] = {}

    def add(self, name: str, **kw) -> ZmqTransport:
        t = ZmqTransport(name, **kw)
        self.nodes[name], self.seen[name] = t, []
        return t

    def pump(self) -> None:
        for name, t in self.nodes.items():
            self.seen[name] += t.poll(5)

    def wait(self, name: str, pred: Callable[[TransportEvent], bool], what: str) -> TransportEvent:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            for ev in self.seen[name]:
                if pred(ev):
                    return ev
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; {name} saw {self.seen[name]}")
            self.pump()

    def received(self, name: str) -> list[Received]:
        return [e for e in self.seen[name] if isinstance(e, Received)]

    def close(self, name: str) -> None:
        self.nodes.pop(name).close()

    def close_all(self) -> None:
        for t in self.nodes.values():
            t.close()
        self.nodes.clear()


@pytest.fixture
def net() -> Iterator[Net]:
    n = Net()
    try:
        yield n
    finally:
        n.close_all()


def is_request(ev: TransportEvent, code: int) -> bool:
    return isinstance(ev, Received) and ev.frame.code == code and not ev.frame.is_response


def test_request_reply_over_a_channel_named_by_peer(net: Net) -> None:
    ns, br = net.add("namesrv-0"), net.add("broker-a-0")
    assert br.send_to_addr(ns.address, request(103, {"brokerName": "broker-a"}).with_opaque(9))
    got = net.wait("namesrv-0", lambda e: is_request(e, 103), "the request")
    assert got.peer == "broker-a-0" and got.channel.startswith("broker-a-0#") and not got.outbound
    assert ns.send_to_channel(got.channel, got.frame.response(remark="ok"))
    resp = net.wait("broker-a-0", lambda e: isinstance(e, Received) and e.frame.is_response, "the response")
    assert resp.outbound and resp.addr == ns.address and resp.channel == out_channel(ns.address)
    assert resp.frame.opaque == 9 and resp.frame.remark == "ok"


def test_peer_death_closes_its_channel_at_once_and_the_client_sees_it(net: Net) -> None:
    ns, br = net.add("namesrv-0"), net.add("broker-a-0")
    br.send_to_addr(ns.address, request(103))
    got = net.wait("namesrv-0", lambda e: is_request(e, 103), "the request")
    net.close("broker-a-0")  # what the kernel does for a SIGKILLed process
    closed = net.wait("namesrv-0", lambda e: isinstance(e, ChannelEvent) and e.kind == "closed", "closed")
    assert closed.channel == got.channel and closed.peer == "broker-a-0"
    assert not ns.send_to_channel(got.channel, got.frame.response())


def test_close_channel_closes_it_for_real_on_both_sides(net: Net) -> None:
    ns, br = net.add("namesrv-0"), net.add("broker-a-0")
    br.send_to_addr(ns.address, request(103))
    got = net.wait("namesrv-0", lambda e: is_request(e, 103), "the request")
    net.wait("broker-a-0", lambda e: isinstance(e, ChannelEvent) and e.kind == "connected", "connected")
    ns.close_channel(got.channel)
    net.wait("namesrv-0", lambda e: isinstance(e, ChannelEvent) and e.kind == "closed" and e.channel == got.channel,
             "closed on the server")
    net.wait("broker-a-0", lambda e: isinstance(e, ChannelEvent) and e.kind == "disconnected", "disconnected")
    br.send_to_addr(ns.address, request(103))  # the client reconnects: a new channel
    again = net.wait("namesrv-0", lambda e: is_request(e, 103) and e.channel != got.channel, "a new channel")
    assert again.peer == "broker-a-0"


def test_an_idle_channel_is_closed_and_reported_idle(net: Net) -> None:
    ns, br = net.add("namesrv-0", idle_ms=150), net.add("broker-a-0")
    br.send_to_addr(ns.address, request(103))
    got = net.wait("namesrv-0", lambda e: is_request(e, 103), "the request")
    idle = net.wait("namesrv-0", lambda e: isinstance(e, ChannelEvent) and e.kind == "idle", "idle close")
    assert idle.channel == got.channel and ns.stats()["idle_closed"] == 1


def test_blocked_links_drop_on_send_and_on_receive(net: Net) -> None:
    ns, br = net.add("namesrv-0"), net.add("broker-a-0")
    peers = {"namesrv-0": ns.address, "broker-a-0": br.address}
    br.set_links({("broker-a-0", "namesrv-0"): LinkRule(blocked=True)}, peers)  # sender side
    assert br.send_to_addr(ns.address, request(103))  # accepted, then dropped: not a connect failure
    br.set_links({}, peers)
    ns.set_links({("broker-a-0", "namesrv-0"): LinkRule(blocked=True)}, peers)  # receiver side
    br.send_to_addr(ns.address, request(104))
    net.wait("broker-a-0", lambda e: isinstance(e, ChannelEvent) and e.kind == "connected", "connected")
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        net.pump()
    assert net.received("namesrv-0") == []
    assert br.stats()["dropped_out"] == 1 and ns.stats()["dropped_in"] == 1
    ns.set_links({}, peers)
    br.send_to_addr(ns.address, request(105))
    net.wait("namesrv-0", lambda e: is_request(e, 105), "delivery once healed")


def test_delay_and_duplicate_on_a_link(net: Net) -> None:
    ns, br = net.add("namesrv-0"), net.add("broker-a-0")
    peers = {"namesrv-0": ns.address, "broker-a-0": br.address}
    br.send_to_addr(ns.address, request(34))
    net.wait("namesrv-0", lambda e: is_request(e, 34), "warm-up")
    br.set_links({("broker-a-0", "namesrv-0"): LinkRule(delay_ms=200, duplicate=1.0)}, peers)
    t0 = time.monotonic()
    br.send_to_addr(ns.address, request(103))
    net.wait("namesrv-0", lambda e: is_request(e, 103), "the delayed request")
    assert time.monotonic() - t0 >= 0.2
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:
        net.pump()
    assert len([e for e in net.received("namesrv-0") if e.frame.code == 103]) == 2


def test_bad_frames_are_reported_not_fatal(net: Net) -> None:
    ns = net.add("namesrv-0")
    ctx = zmq.Context()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.setsockopt(zmq.IDENTITY, b"mallory")
    try:
        raw.connect("tcp://" + ns.address)
        raw.send_multipart([b"{not json", b""])
        raw.send_multipart([b"a", b"b", b"c"])
        bad = net.wait("namesrv-0", lambda e: isinstance(e, BadInput), "a bad frame")
        assert bad.peer == "mallory" and "JSON" in bad.reason
        deadline = time.monotonic() + DEADLINE_S
        while ns.counters["bad_frames"] < 2:  # the 3-part frame: counted, its event held back (rate limit)
            assert time.monotonic() < deadline, ns.counters
            net.pump()
        assert [e for e in net.seen["namesrv-0"] if isinstance(e, BadInput)] == [bad]
    finally:
        raw.close()
        ctx.term()


def test_a_refused_connect_fails_the_send(net: Net) -> None:
    br = net.add("broker-a-0", connect_timeout_ms=5000)
    dead = ZmqTransport("gone")
    addr = dead.address
    dead.close()
    frame = request(103).with_opaque(3)
    accepted = br.send_to_addr(addr, frame)
    if accepted:  # queued until the connect attempt fails
        failed = net.wait("broker-a-0", lambda e: isinstance(e, SendFailed), "the send to fail")
        assert failed.frame.opaque == 3 and failed.reason == "connection refused"
    deadline = time.monotonic() + DEADLINE_S
    while br.send_to_addr(addr, frame):  # once refused, sends fail at once
        assert time.monotonic() < deadline, "sends to a refused address never failed at once"
        net.pump()


def test_a_backlog_whose_queue_a_refusal_emptied_has_no_due_time(net: Net) -> None:
    """Until the next flush drops it, an outbound connection may stay in the backlog with an
    empty queue (a refused connect fails its frames at once): the next wake-up ignores it."""
    br = net.add("broker-a-0")
    dead = ZmqTransport("gone")
    addr = dead.address
    dead.close()
    br.send_to_addr(addr, request(104).with_opaque(4))
    (ob,) = br.outbound.backlogged or [br.outbound.get(addr)]
    ob.queue.clear()
    br.outbound.backlogged.add(ob)
    assert br._next_due(0.0) != 1.0  # computed, without the backlog: no error, no 1 ms spin


def test_oneshot_request_and_refused(net: Net) -> None:
    ns = net.add("namesrv-0")


    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            for e in ns.poll(10):
                if is_request(e, 106):
                    ns.send_to_channel(e.channel, e.frame.response(remark="cluster"))

    th = threading.Thread(target=serve)
    th.start()
    try:
        resp = request_once(ns.address, request(106), 5000, identity="admin-test")
        assert resp.flag == Flag.RESPONSE and resp.remark == "cluster"
    finally:
        stop.set()
        th.join()
    dead = ZmqTransport("gone")
    addr = dead.address
    dead.close()
    t0 = time.monotonic()
    with pytest.raises(RequestFailed):
        request_once(addr, Frame(code=106), 10_000)
    assert time.monotonic() - t0 < 10  # refused, not timed out


def test_back_to_back_connections_on_a_reused_fd_all_get_answers(net: Net) -> None:
    """Each one-shot request is a new connection that the kernel usually puts on the fd of the
    one that just closed; a late close of the old one must not take the new one's channel."""
    broker = net.add("broker-a-0")
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            for e in broker.poll(5):
                if isinstance(e, Received) and not e.frame.is_response:
                    broker.send_to_channel(e.channel, e.frame.response())

    th = threading.Thread(target=serve)
    th.start()
    failures = []
    try:
        for i in range(60):
            try:
                request_once(broker.address, request(17, {"topic": f"T{i}"}), 10_000,
                             identity="admin-1" if i % 2 else f"admin-{i}")
            except RequestFailed as exc:
                failures.append((i, str(exc)))
    finally:
        stop.set()
        th.join()
    assert failures == []
