"""Producer role: send retries and fault tolerance (docs/rocketmq-model.md §3.2, §3.4): another broker
on a retry, codes that stop at once, a stored result past the timeout, and latency fault avoidance."""

from rmqemu.emulator.protocol import RequestCode, ResponseCode
from rmqemu.emulator.roles.client.workload import OutgoingMessage
from tests.roles.fakes import response
from tests.roles.test_client_producer import answer_route, make, msg, route, send


def test_sync_retry_walks_to_another_broker():
    d = make()
    send(d, msg())
    answer_route(d, route("b1", "b2"))
    first = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    d.answer(first, response(ResponseCode.SERVICE_NOT_AVAILABLE, remark="service not available now"))
    second = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    assert second.addr != first.addr
    assert second.timeout_ms <= first.timeout_ms
    d.answer(second, None)  # timeout
    third = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    d.answer(third, response(ResponseCode.SYSTEM_ERROR, remark="x"))
    evs = d.events("send")
    assert [(e["attempt"], e["outcome"], e["code"]) for e in evs] == [
        (1, "error", 14), (2, "timeout", 10002), (3, "error", 1)]
    fail = d.events("send.fail")[-1]
    assert fail["code"] == 1 and fail["error"].startswith("Send [3] times, still failed, cost [")
    assert "BrokersSent: [" in fail["error"] and not d.pending


def test_stored_result_survives_the_call_timeout_with_retry_another_broker():
    """retryAnotherBrokerWhenNotStoreOK: a SLAVE_NOT_AVAILABLE (stored) answer continues the
    loop, but past the send timeout the loop ends and the stored result is returned (docs/rocketmq-model.md §3.2),
    not "sendDefaultImpl call timeout"."""
    d = make(config={"retryAnotherBrokerWhenNotStoreOK": True})
    send(d, msg())
    answer_route(d, route("b1", "b2"))
    first = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    d.time.mono_ms += 10_000  # the answer comes after the whole send timeout
    d.answer(first, response(ResponseCode.SLAVE_NOT_AVAILABLE, fields={"msgId": "x", "queueId": 0, "queueOffset": 0}))
    assert [(e["outcome"], e["code"]) for e in d.events("send")] == [("ok", ResponseCode.SLAVE_NOT_AVAILABLE)]
    assert not d.events("send.fail") and not d.pending_to(code=RequestCode.SEND_MESSAGE_V2)


def test_non_retry_code_stops_at_once():
    d = make()
    send(d, msg())
    answer_route(d, route("b1", "b2"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(ResponseCode.SYSTEM_BUSY, remark="busy"))
    assert not d.pending and d.events("send.fail")[-1]["code"] == 2


def test_missing_master_is_broker_not_exist_and_retried():
    d = make()
    send(d, msg())
    answer_route(d, route("b1"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    d.role.instance.broker_addr_table["b1"] = {1: "addr-b1-s"}  # a later route showed only the slave
    send(d, msg(i=2))
    evs = d.events("send")[-3:]
    assert [(e["code"], e["error"]) for e in evs] == [(10003, "The broker[b1] not exist")] * 3


def test_async_retry_same_queue_other_broker():
    d = make()
    send(d, msg(), mode="async")
    answer_route(d, route("b1", "b2"))
    first = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    d.answer(first, None)
    second = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    assert second.addr != first.addr and second.frame.fields["queueId"] == first.frame.fields["queueId"]
    d.answer(second, response(0))
    assert [e["outcome"] for e in d.events("send")] == ["timeout", "ok"]


def test_latency_fault_avoids_isolated_broker():
    d = make(config={"sendLatencyFaultEnable": True})
    send(d, msg())
    answer_route(d, route("b1", "b2"))
    first = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    bad = first.addr
    d.answer(first, None)
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    for i in range(5):
        send(d, msg(i=10 + i))
        req = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
        assert req.addr != bad
        d.answer(req, response(0))


def test_a_delayed_message_given_up_says_its_level_on_every_line():
    """A message with a delay level that fails every attempt: each ``send`` line and its
    ``send.fail`` carry ``delay_level`` (the registry lists it on both kinds, so neither write raises)."""
    d = make()
    send(d, OutgoingMessage("T", b"hello", {"UNIQ_KEY": "m1", "DELAY": "5"}))
    answer_route(d, route("b1"))
    for _ in range(3):
        d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], None)  # every attempt times out
    assert [e["delay_level"] for e in d.events("send")] == [5, 5, 5]
    assert d.events("send.fail")[-1]["delay_level"] == 5 and not d.role.sync_in_flight
