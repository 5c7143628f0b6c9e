"""Emulated RocketMQ 5 clients over a real proxy, namesrv and broker on the fake clock: routes,
send retries, pick_first over the endpoints, receive/ack/redelivery, the proxy's one-frame stream."""

from __future__ import annotations

from rmqemu.emulator.protocol import ChannelEvent
from rmqemu.emulator.roles.client5.siphash import siphash24
from rmqemu.emulator.roles.client5.wire import PickFirst
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2

from .broker_helpers import send
from .client5_helpers import consumer, producer, serve
from .proxy_helpers import PROXY_ADDR, ProxyRig
from .test_cluster_flow import A0, B0

Code = pb.Code


def rig_ab() -> ProxyRig:
    rig = ProxyRig()
    for name, addr in (("broker-a", A0), ("broker-b", B0)):
        rig.cluster.add(name, 0, addr)
        send(rig.cluster.brokers[addr], "T")
        rig.cluster.pump()
    return rig


def test_siphash_is_the_reference_sip24_with_guavas_key() -> None:
    assert siphash24(bytes(range(15))) == 0xA129CA6149BE45E5  # the SipHash paper's test vector
    assert siphash24(b"") == 0x726FDB47DD0E0E31


def test_pick_first_keeps_an_address_until_its_connection_is_lost() -> None:
    p = PickFirst(["a", "b", "c"])
    assert p.choose() == "a"
    p.on_channel("disconnected", "a")
    assert p.choose() == "b" and p.moves == 1
    p.on_channel("connected", "a")
    assert p.choose() == "b"  # pick_first stays where it is connected
    p.on_channel("disconnected", "b")
    assert p.choose() == "a"


def test_the_route_is_the_proxys_answer_and_a_client_route_line() -> None:
    rig = rig_ab()
    d = producer(rig)
    serve(rig, d)
    [line] = d.events("client.route")
    assert line["source"] == "proxy-0" and {q["broker"] for q in line["publish_queues"]} == {"broker-a", "broker-b"}
    assert not rig.proxy.events("client.route", 0) or all(e.get("view") == "proxy" for e in rig.proxy.events(
        "client.route"))  # the proxy wrote only its own view, none for the emulated client


def test_a_send_without_answer_is_retried_on_the_next_broker_then_given_up() -> None:
    rig = rig_ab()
    d = producer(rig)
    serve(rig, d)
    mark = d.mark()
    d.run(lambda now: d.role.send(d.role.factory.next_message(), now))
    for _ in range(3):
        [req] = d.pending_to(PROXY_ADDR)
        d.answer(req, None)
    lines = d.events("send", mark)
    assert [e["attempt"] for e in lines] == [1, 2, 3] and {e["outcome"] for e in lines} == {"timeout"}
    assert lines[0]["broker"] != lines[1]["broker"]  # candidates on distinct brokers
    [fail] = d.events("send.fail", mark)
    assert fail["attempts"] == 3 and fail["mode"] == "grpc"


def test_too_many_requests_backs_off_before_the_next_attempt() -> None:
    rig = rig_ab()
    d = producer(rig)
    serve(rig, d)
    d.run(lambda now: d.role.send(d.role.factory.next_message(), now))
    [req] = d.pending_to(PROXY_ADDR)
    busy = pb.SendMessageResponse(status=v2.status(Code.TOO_MANY_REQUESTS, "busy"))
    d.answer(req, v2.answer(req.frame, busy))
    assert d.pending_to(PROXY_ADDR) == []
    d.advance(19)
    assert d.pending_to(PROXY_ADDR) == []  # 10 ms x 2^1
    d.advance(2)
    assert len(d.pending_to(PROXY_ADDR)) == 1


def test_a_send_through_the_proxy_is_stored_with_its_unicode_body_and_keys() -> None:
    rig = rig_ab()
    d = producer(rig)
    serve(rig, d)
    msg = d.role.factory.next_message()
    msg.properties["KEYS"] = "ключ\u2028🚀"
    d.run(lambda now: d.role.send(msg, now))
    serve(rig, d)
    [line] = d.events("send")
    assert line["outcome"] == "ok" and line["proxy"] == "proxy-0" and line["mode"] == "grpc"
    assert rig.proxy.events("send") == []  # the emulated client writes its own line
    c = consumer(rig)
    serve(rig, c)
    got = [i for e in c.events("consume") for i in e["msg_ids"]]
    assert msg.msg_id in got


def test_a_send_line_names_the_queue_the_proxy_chose_not_the_clients_candidate() -> None:
    """The 5.x proxy ignores the client's queue: misroutes are judged on where a message went."""
    rig = rig_ab()
    d = producer(rig)
    serve(rig, d)
    for _ in range(6):
        msg = d.role.factory.next_message()
        d.run(lambda now, msg=msg: d.role.send(msg, now))
        serve(rig, d)
    lines = d.events("send")
    assert len(lines) == 6 and all(line["outcome"] == "ok" for line in lines)
    stored = {}
    for b in rig.cluster.brokers.values():
        for (topic, qid), records in b.role.store.queues.items():
            if topic == "T":
                stored.update({r["msgId"]: (b.role.cfg.brokerName, qid) for r in records})
    assert {line["msg_id"]: (line["broker"], line["queue_id"]) for line in lines}.items() <= stored.items()


def test_the_proxy_answers_an_emulated_receive_in_one_packed_frame() -> None:
    rig = rig_ab()
    c = consumer(rig)
    serve(rig, c)
    replies = rig.proxy.replies("c5:cg-0")
    receive = [r for r in replies if v2.unpack(r.frame.body) and r.frame.fields.get("end")]
    assert receive, replies
    parts = [pb.ReceiveMessageResponse.FromString(p) for p in v2.unpack(receive[0].frame.body) or []]
    assert parts[0].WhichOneof("content") == "status" and parts[-1].WhichOneof("content") == "delivery_timestamp"
    assert rig.proxy.events("consume") == []


def test_an_unacked_message_comes_back_one_attempt_later() -> None:
    rig = rig_ab()
    c = consumer(rig, fail_rate=1.0)
    serve(rig, c)
    first = c.events("consume")
    left = {i for e in first for i in e.get("reconsume_later", [])}
    assert left and c.role.stats["acked"] == 0
    c.role.fail_rate = 0.0
    for addr in (A0, B0):
        rig.cluster.brokers[addr].advance(30_000)  # the lease runs out, the revive puts it back
    rig.proxy.advance(30_000)
    c.advance(30_000)
    for _ in range(6):
        serve(rig, c)
        c.advance(1000)
    again = {i: a for e in c.events("consume") for i, a in zip(e["msg_ids"], e["delivery_attempts"], strict=True)}
    assert left & set(again) and all(again[i] == 2 for i in left & set(again))


def test_a_lost_connection_moves_the_client_to_the_next_endpoint() -> None:
    rig = rig_ab()
    d = producer(rig)
    d.run(lambda now: d.role.on_peers({"proxy-0": PROXY_ADDR, "proxy-1": "127.0.0.1:18090"}, now))
    d.role.endpoint_names = ["proxy-0", "proxy-1"]
    d.run(lambda now: d.role.on_peers({"proxy-0": PROXY_ADDR, "proxy-1": "127.0.0.1:18090"}, now))
    serve(rig, d)
    d.transport.push(ChannelEvent(kind="disconnected", addr=PROXY_ADDR))
    d.advance(1)
    d.run(lambda now: d.role.send(d.role.factory.next_message(), now))
    assert [r.addr for r in d.pending] == ["127.0.0.1:18090"]
