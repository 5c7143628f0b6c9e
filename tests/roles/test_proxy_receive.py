"""Receive, ack, change of invisible time and the DLQ through the proxy, over a real broker's POP
(docs/rocketmq-model.md §10.1, §10.2), on the fake clock."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import EmulatorCode, Flag, Frame
from rmqemu.emulator.roles.common.base import Emit
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.messages import Handle
from rmqemu.emulator.roles.proxy.proxy import ProxyConfig

from .broker_helpers import send
from .proxy_helpers import ProxyRig
from .test_cluster_flow import A0
from .test_proxy import message, route

Code = pb.Code


def rig_with(bodies: list[bytes], cfg: ProxyConfig | None = None) -> ProxyRig:
    rig = ProxyRig(cfg)
    rig.cluster.add("broker-a", 0, A0)
    send(rig.cluster.brokers[A0], "T")  # creates T; its message is U-T-0
    rig.cluster.pump()
    route(rig)
    for i, body in enumerate(bodies):
        [resp] = rig.call("SendMessage", pb.SendMessageRequest(messages=[message(msg_id=f"M{i}", body=body)]))
        assert resp.status.code == Code.OK, resp
    return rig


def receive(rig: ProxyRig, invisible_ms: int = 30_000, group: str = "G", batch: int = 32,
            auto_renew: bool = False) -> tuple[pb.Status, list[pb.Message]]:
    req = pb.ReceiveMessageRequest(batch_size=batch, auto_renew=auto_renew)
    req.group.name = group
    req.message_queue.topic.name = "T"
    req.message_queue.id = -1
    req.filter_expression.expression = "*"
    if not auto_renew:
        v2.set_duration(req.invisible_duration, invisible_ms)
    v2.set_duration(req.long_polling_timeout, 5_000)
    channel = f"grpc:recv-{len(rig.proxy.actions)}"
    responses = rig.call("ReceiveMessage", req, channel=channel)
    if not rig.ended(channel):  # held: nothing yet; the poll answers when it runs out
        rig.proxy.advance(5_000)
        rig.pump()
        responses = rig.responses("ReceiveMessage", channel)
    assert rig.ended(channel)
    status = next(r.status for r in responses if r.WhichOneof("content") == "status")
    return status, [r.message for r in responses if r.WhichOneof("content") == "message"]


def ack(rig: ProxyRig, m: pb.Message, group: str = "G") -> pb.AckMessageResponse:
    req = pb.AckMessageRequest(entries=[pb.AckMessageEntry(message_id=m.system_properties.message_id,
                                                           receipt_handle=m.system_properties.receipt_handle)])
    req.group.name, req.topic.name = group, "T"
    [resp] = rig.call("AckMessage", req)
    return resp


def test_receive_delivers_with_handles_digests_and_attempts() -> None:
    rig = rig_with([b"a", "ü🚀".encode(), b"\x00\xff"])
    status, got = receive(rig)
    assert status.code == Code.OK
    by_id = {m.system_properties.message_id: m for m in got}
    assert set(by_id) == {"U-T-0", "M0", "M1", "M2"}
    assert by_id["M1"].body == "ü🚀".encode() and by_id["M2"].body == b"\x00\xff"
    for m in got:
        sp = m.system_properties
        assert sp.delivery_attempt == 1 and sp.body_encoding == pb.IDENTITY and sp.receipt_handle
        assert sp.body_digest.type == pb.MD5 and sp.body_digest.checksum.isupper()
    assert all(ack(rig, m).status.code == Code.OK for m in got)
    rig.proxy.advance(60_000)
    rig.cluster.brokers[A0].advance(60_000)
    assert receive(rig)[0].code == Code.MESSAGE_NOT_FOUND  # acked: never again


def test_an_unacked_message_comes_back_with_its_attempt_raised() -> None:
    rig = rig_with([b"x"])
    _, first = receive(rig, invisible_ms=10_000)
    target = next(m for m in first if m.system_properties.message_id == "M0")
    for m in first:
        if m is not target:
            ack(rig, m)
    rig.proxy.advance(12_000)
    rig.cluster.brokers[A0].advance(12_000)
    _, again = receive(rig, invisible_ms=10_000)
    [back] = [m for m in again if m.system_properties.message_id == "M0"]
    assert back.system_properties.delivery_attempt == 2 and back.body == b"x"
    assert ack(rig, back).status.code == Code.OK


def test_an_ack_after_the_lease_is_refused_by_the_proxy() -> None:
    rig = rig_with([b"x"])
    _, got = receive(rig, invisible_ms=10_000)
    rig.proxy.advance(10_001)
    resp = ack(rig, got[0])
    assert resp.status.code == Code.INVALID_RECEIPT_HANDLE and "expired" in resp.status.message
    results = [a.fields["result"] for a in rig.proxy.actions if isinstance(a, Emit) and a.kind == "proxy.ack"]
    assert results == ["expired"]


def test_change_invisible_returns_a_new_handle_that_acks() -> None:
    rig = rig_with([b"x"])
    _, got = receive(rig, invisible_ms=10_000)
    m = got[0]
    req = pb.ChangeInvisibleDurationRequest(receipt_handle=m.system_properties.receipt_handle,
                                            message_id=m.system_properties.message_id)
    req.group.name, req.topic.name = "G", "T"
    v2.set_duration(req.invisible_duration, 60_000)
    [resp] = rig.call("ChangeInvisibleDuration", req)
    assert resp.status.code == Code.OK and resp.receipt_handle != m.system_properties.receipt_handle
    rig.proxy.advance(20_000)  # past the first lease, inside the new one
    m.system_properties.receipt_handle = resp.receipt_handle
    assert ack(rig, m).status.code == Code.OK


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=60))
def test_forged_handles_never_hurt_the_proxy(text: str) -> None:
    rig = rig_with([])
    m = message(msg_id="M")
    m.system_properties.receipt_handle = text
    assert ack(rig, m).status.code in (Code.INVALID_RECEIPT_HANDLE, Code.INTERNAL_SERVER_ERROR, Code.OK)
    assert route(rig).status.code == Code.OK


NUMBER = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([2**63, 2**63 - 1, -(2**63) - 1, 2**31, 2**64 + 5]))
FIELD = st.one_of(NUMBER.map(str), st.sampled_from(["broker-a", "broker-b", "0", "+1", "1_0", " ", "", "1.5", "٣"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(FIELD, min_size=8, max_size=10), st.integers(0, 2**40))
def test_forged_handles_of_numbers_never_reach_a_broker_unencodable(fields: list[str], invisible_ms: int) -> None:
    """A handle shaped like a real one, any numbers in it: each is what Java's parseLong/parseInt
    reads or the handle is invalid; an ack and a lease change of it are answered, and every frame
    the proxy sends encodes (a field of 2**64 once killed the proxy when its ACK was encoded)."""
    rig = rig_with([])
    m = message(msg_id="M")
    m.system_properties.receipt_handle = " ".join(fields)
    handle = Handle.decode(m.system_properties.receipt_handle)
    if handle is not None:
        assert all(-(2**63) <= getattr(handle, f) < 2**63 for f in ("start_offset", "retrieve_ms", "offset"))
        assert all(-(2**31) <= getattr(handle, f) < 2**31 for f in ("revive_qid", "queue_id"))
    assert ack(rig, m).status.code in (Code.INVALID_RECEIPT_HANDLE, Code.INTERNAL_SERVER_ERROR, Code.OK)
    req = pb.ChangeInvisibleDurationRequest(receipt_handle=m.system_properties.receipt_handle, message_id="M")
    req.group.name, req.topic.name = "G", "T"
    v2.set_duration(req.invisible_duration, invisible_ms)
    [resp] = rig.call("ChangeInvisibleDuration", req)
    assert resp.status.code != Code.OK or handle is not None


def test_a_handle_is_parsed_as_java_parses_it() -> None:
    good = Handle.decode("0 1700000000000 60000 1 0 broker-a 3 7 42")
    assert good is not None
    assert (good.broker, good.queue_id, good.offset, good.commit_log_offset) == ("broker-a", 3, 7, 42)
    assert Handle.decode("0 1 2 3 0 broker-a 3 7").commit_log_offset == -1  # type: ignore[union-attr]
    for bad in ("0 1 2 3 0 b 3 18446744073709551621", "0 1 2 2147483648 0 b 3 7", "0 1 2 3 0 b 1_0 7",
                "0 1 2 3 0 b 3", "0 1.5 2 3 0 b 3 7", "0 1 2 3 0 b 3 7 9223372036854775808"):
        assert Handle.decode(bad) is None, bad


def test_past_max_attempts_goes_to_the_dlq_and_is_not_delivered() -> None:
    rig = rig_with([b"x"], ProxyConfig(consumerMaxAttempts=2))
    for _ in range(2):
        _, got = receive(rig, invisible_ms=10_000)
        assert any(m.system_properties.message_id == "M0" for m in got)
        rig.proxy.advance(12_000)
        rig.cluster.brokers[A0].advance(12_000)
    status, got = receive(rig, invisible_ms=10_000)
    assert not any(m.system_properties.message_id == "M0" for m in got)
    dead = [a.fields for a in rig.proxy.actions if isinstance(a, Emit) and a.kind == "proxy.dlq"]
    assert [(d["msg_id"], d["attempt"], d["result"]) for d in dead if d["msg_id"] == "M0"] == [("M0", 3, "ok")]
    store = rig.cluster.brokers[A0].role.store
    assert [r["properties"]["UNIQ_KEY"] for r in store.queues.get(("%DLQ%G", 0), [])].count("M0") == 1


def test_forward_to_dlq_stores_the_copy_and_ends_the_lease() -> None:
    """A FIFO PushConsumer's ForwardMessageToDeadLetterQueue: sent back with maxReconsumeTimes 0,
    then acked, so it never comes back (5.x's forwardMessageToDeadLetterQueue)."""
    rig = rig_with([b"x"])
    _, got = receive(rig, invisible_ms=10_000)
    target = next(m for m in got if m.system_properties.message_id == "M0")
    for m in got:
        if m is not target:
            ack(rig, m)
    req = pb.ForwardMessageToDeadLetterQueueRequest(receipt_handle=target.system_properties.receipt_handle,
                                                    message_id="M0", delivery_attempt=1, max_delivery_attempts=1)
    req.group.name, req.topic.name = "G", "T"
    [resp] = rig.call("ForwardMessageToDeadLetterQueue", req)
    assert resp.status.code == Code.OK
    store = rig.cluster.brokers[A0].role.store
    assert [r["properties"]["UNIQ_KEY"] for r in store.queues.get(("%DLQ%G", 0), [])] == ["M0"]
    rig.proxy.advance(12_000)
    rig.cluster.brokers[A0].advance(12_000)
    assert receive(rig)[0].code == Code.MESSAGE_NOT_FOUND  # acked after the send-back: not revived
    req.receipt_handle = "not a handle"
    [bad] = rig.call("ForwardMessageToDeadLetterQueue", req)
    assert bad.status.code == Code.INVALID_RECEIPT_HANDLE


def _receive_unpumped(rig: ProxyRig, channel: str, fields: dict[str, object] | None = None) -> None:
    """A ReceiveMessage whose POP the proxy sends but the broker has not answered yet."""
    req = pb.ReceiveMessageRequest(batch_size=32, auto_renew=False)
    req.group.name, req.message_queue.topic.name, req.message_queue.id = "G", "T", -1
    req.filter_expression.expression = "*"
    v2.set_duration(req.invisible_duration, 30_000)
    v2.set_duration(req.long_polling_timeout, 5_000)
    rig.proxy.deliver(Frame(code=EmulatorCode.GRPC, opaque=1, flag=Flag.REQUEST, body=req.SerializeToString(),
                            fields={"method": "ReceiveMessage", "client_id": "cid-1", **(fields or {})}),
                      channel=channel, peer="client@42", addr="127.0.0.1:55555")


def _nacks(rig: ProxyRig) -> list[dict]:
    return [a.fields for a in rig.proxy.actions if isinstance(a, Emit) and a.kind == "proxy.nack"]


def test_messages_popped_for_a_call_its_client_left_are_handed_back_within_a_second() -> None:
    """5.x's ReceiveMessageResponseStreamWriter: a stream it cannot write (the client cancelled, or
    its deadline passed) changes each message's lease to 1 s, so it comes back soon (abandoned.py)."""
    for how in ("grpc closed", "emulated deadline"):
        rig = rig_with([b"x"])
        channel = "grpc:left" if how == "grpc closed" else "zmq-client"
        _receive_unpumped(rig, channel, None if how == "grpc closed" else {"timeout_ms": 2_000})
        if how == "grpc closed":
            rig.proxy.channel("closed", channel)  # the client cancelled while the POP was out
        else:
            rig.proxy.advance(2_001)  # the answer comes after the client's deadline
        rig.pump()
        assert not any(r.frame.body for r in rig.proxy.replies(channel)), how  # nothing written to it
        assert sorted((n["msg_id"], n["result"]) for n in _nacks(rig)) == [("M0", "ok"), ("U-T-0", "ok")], how
        changes = [e for e in rig.cluster.brokers[A0].events("pop.change_invisible")]
        assert [e["invisible_ms"] for e in changes] == [1000, 1000], how
        rig.proxy.advance(3_000)  # not the 30 s lease: the 1 s one, its revive, and the next receive
        rig.cluster.brokers[A0].advance(3_000)
        _, again = receive(rig)
        assert sorted((m.system_properties.message_id, m.system_properties.delivery_attempt) for m in again) == [
            ("M0", 2), ("U-T-0", 2)], how


def test_a_call_answered_before_its_deadline_is_delivered_not_handed_back() -> None:
    rig = rig_with([b"x"])
    _receive_unpumped(rig, "zmq-client", {"timeout_ms": 8_000})
    rig.proxy.advance(7_000)
    rig.pump()
    assert _nacks(rig) == [] and rig.proxy.replies("zmq-client")
    rig.proxy.channel("closed", "grpc:other")  # another call's end changes nothing here
    assert rig.proxy.role.receiving.abandoned.waiting == {}
