"""Ordered sends: SelectMessageQueueByHash and sendSelectImpl (docs/rocketmq-model.md §3.7)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu import wire_json
from rmqemu.emulator.protocol import RequestCode, ResponseCode
from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.client.send_flow import ACCESS_BROKER_TIMEOUT, BROKER_NOT_EXIST_EXCEPTION
from rmqemu.emulator.roles.client.send_select import hash_index, select_message_queue_by_hash
from rmqemu.emulator.roles.client.subscription import java_string_hash
from rmqemu.emulator.roles.client.validators import DEFAULT_FAQ_URL
from rmqemu.emulator.roles.client.workload import KeyPicker, MessageFactory, OrderedWorkload, ProducerWorkload
from tests.roles.fakes import response
from tests.roles.test_client_producer import answer_route, make, msg, route

# Produced by a throwaway Java 17 program (javac, outside the repository): per key, its UTF-16
# code units in hex, String.hashCode(), and SelectMessageQueueByHash's index for 1, 3, 4, 7, 8
# and 12 queues (`int v = h % n; if (v < 0) v = Math.abs(v);`).
JAVA = [
    ("", 0, [0, 0, 0, 0, 0, 0]),
    ("0061", 97, [0, 1, 1, 6, 1, 1]),
    ("00680065006c006c006f", 99162322, [0, 1, 2, 0, 2, 10]),
    ("0070006f006c007900670065006e0065006c007500620072006900630061006e00740073", -2147483648,
     [0, 2, 0, 2, 0, 8]),
    ("004700790064005a0047005f", -2147483648, [0, 2, 0, 2, 0, 8]),
    ("00440045005300490047004e0049004e004700200057004f0052004b0048004f0055005300450053", -2147483648,
     [0, 2, 0, 2, 0, 8]),
    ("006f0072006400650072002d0031", -1207111310, [0, 2, 2, 6, 6, 2]),
    ("00700067002d0031002d0030003a0037", 179780731, [0, 1, 3, 4, 3, 7]),
    ("d83dde00", 1772899, [0, 1, 3, 2, 3, 7]),
    ("006b00650079002dd83dde00002d4e2d6587", -1909290826, [0, 1, 2, 2, 2, 10]),
    ("d800", 55296, [0, 0, 0, 3, 0, 0]),
    ("dfffd800", 1832929, [0, 1, 1, 0, 1, 1]),
    ("0000", 0, [0, 0, 0, 0, 0, 0]),
    ("00410061", 2112, [0, 0, 0, 5, 0, 0]),
    ("00420042", 2112, [0, 0, 0, 5, 0, 0]),
    ("007a" * 20, 1718487168, [0, 0, 0, 6, 0, 0]),
    ("00e9007400e9", 227742, [0, 0, 2, 4, 6, 6]),
    ("ffffffffffff", 65076255, [0, 0, 3, 6, 7, 3]),
]
SIZES = [1, 3, 4, 7, 8, 12]


def from_units(hexed: str) -> str:
    """A Python str with exactly these UTF-16 code units (a pair becomes one astral character,
    a lone surrogate stays one)."""
    return bytes.fromhex(hexed).decode("utf-16-be", "surrogatepass")


@pytest.mark.parametrize("units,h,indexes", JAVA)
def test_hash_and_index_match_java(units, h, indexes):
    key = from_units(units)
    assert java_string_hash(key) == h
    assert [hash_index(key, n) for n in SIZES] == indexes


def _utf16_units(s: str) -> list[int]:
    out = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            out += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            out.append(cp)
    return out


def _java_int(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 2**32 if x >= 2**31 else x


ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()))  # surrogates included


@given(ANY_TEXT)
def test_hash_is_the_31_polynomial_over_utf16_code_units(key):
    h = 0
    for unit in _utf16_units(key):
        h = _java_int(31 * h + unit)
    assert java_string_hash(key) == h


@given(ANY_TEXT, ANY_TEXT)
def test_hash_of_a_concatenation(a, b):
    """Java's hash composes: h(a + b) = h(a) * 31^len(b) + h(b), in int arithmetic."""
    n = len(_utf16_units(b))
    assert java_string_hash(a + b) == _java_int(java_string_hash(a) * 31**n + java_string_hash(b))


@given(ANY_TEXT, st.integers(1, 4096))
def test_index_is_javas_truncated_remainder_made_positive(key, n):
    h = java_string_hash(key)
    value = int(h - n * int(h / n)) if abs(h) < 2**52 else 0  # Java %: the dividend's sign (floats exact here)
    value = abs(value)
    i = hash_index(key, n)
    assert 0 <= i < n and i == value
    mqs = [MessageQueue("T", f"b{q // 4}", q % 4) for q in range(n)]
    assert select_message_queue_by_hash(mqs, key) == mqs[i]


# ----------------------------------------------------------------------------- workload


def test_ordered_workload_parsing_and_errors():
    assert OrderedWorkload.from_dict(True) == OrderedWorkload(16, "random")
    assert ProducerWorkload.from_dict({"topics": ["T"], "ordered": {"keys": 3, "pick": "cycle"}}).ordered.keys == 3
    for bad, text in [({"keys": 0}, "keys"), ({"pick": "x"}, "pick"), ({"kes": 1}, "kes"), (5, "true or a mapping")]:
        with pytest.raises(ValueError, match=text):
            OrderedWorkload.from_dict(bad)
    for bad in ({"mode": "async"}, {"batch": 2}):
        with pytest.raises(ValueError, match="needs mode sync and batch 1"):
            ProducerWorkload.from_dict({"topics": ["T"], "ordered": True, **bad})


def test_keys_are_per_node_seeded_and_bound_to_a_topic():
    w = ProducerWorkload.from_dict({"topics": ["A", "B"], "ordered": {"keys": 4}})
    draws = [KeyPicker("pg-0", w.ordered, random.Random("7:pg-0:keys")).next_key() for _ in range(2)]
    assert draws[0] == draws[1]  # same seed, same sequence
    cycle = KeyPicker("pg-0", OrderedWorkload(3, "cycle"), random.Random(1))
    assert [cycle.next_key()[1] for _ in range(4)] == ["pg-0:0", "pg-0:1", "pg-0:2", "pg-0:0"]
    f = MessageFactory("pg-0", w, random.Random(1))
    m = [f.next_message((i, f"pg-0:{i}")) for i in (0, 1, 3, 3)]
    assert [x.topic for x in m] == ["A", "B", "B", "B"] and [x.properties["KEYS"] for x in m][2] == "pg-0:3"


# ----------------------------------------------------------------------------- sendSelectImpl


def ordered(d, key, i=1, topic="T"):
    return d.run(lambda now: d.role.send(msg(topic, i), "sync", now, sharding_key=key))


def test_the_keys_queue_of_the_whole_publish_list_and_the_key_on_the_event():
    d = make()
    key = from_units("006b00650079002dd83dde00002d4e2d6587")  # "key-😀-中文": index 2 of 8
    ordered(d, key)
    answer_route(d, route("b1", "b2"))
    [req] = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    assert (req.addr, req.frame.fields["queueId"]) == ("addr-b1", 2)
    assert (req.timeout_ms, req.min_timeout_wall_ms) == (3000, 200)  # sendMsgTimeout budget
    d.answer(req, response(0))
    ev = d.events("send")[-1]
    assert (ev["sharding_key"], ev["route_queues"], ev["broker"], ev["queue_id"], ev["outcome"]) == (
        key, 8, "b1", 2, "ok")
    assert d.role.keys_in_flight == set() and d.role.counts["ok"] == 1


@pytest.mark.parametrize("code", [ResponseCode.SYSTEM_BUSY, ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION])
def test_a_broker_error_is_not_retried_anywhere(code):
    d = make(config={"sendLatencyFaultEnable": True})
    ordered(d, "a")  # hashCode 97: index 1 of 8
    answer_route(d, route("b1", "b2"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(code, remark="busy"))
    assert d.pending_to(code=RequestCode.SEND_MESSAGE_V2) == []  # a plain sync send would try b2
    [ev] = d.events("send")
    fail = d.events("send.fail")[-1]
    assert (ev["outcome"], ev["attempt"], fail["attempts"], fail["code"], fail["sharding_key"]) == (
        "error", 1, 1, code, "a")
    assert d.role.fault.tolerance.items == {}  # sendKernelImpl writes no latency fault item


def test_a_timeout_fails_the_send_on_that_queue():
    d = make()
    ordered(d, "a")
    answer_route(d, route("b1", "b2"))
    d.advance(3001)
    [ev] = d.events("send")
    assert (ev["outcome"], ev["code"], ev["queue_id"]) == ("timeout", ACCESS_BROKER_TIMEOUT, 1)
    assert d.events("send.fail")[-1]["attempts"] == 1 and d.pending_to(code=RequestCode.SEND_MESSAGE_V2) == []


def test_a_broker_without_an_address_fails_at_once():
    d = make()
    ordered(d, "a")
    answer_route(d, route("b1", "b2"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    d.role.instance.broker_addr_table.pop("b1")  # the publish info still lists b1's queues
    ordered(d, "a", i=2)
    assert d.pending_to(code=RequestCode.SEND_MESSAGE_V2) == [] and d.pending == []  # no route refresh either
    fail = d.events("send.fail")[-1]
    assert (fail["code"], fail["attempts"]) == (BROKER_NOT_EXIST_EXCEPTION, 1)
    assert fail["error"] == "The broker[b1] not exist"
    assert d.events("send")[-1]["latency_ms"] is None


def test_no_route_is_sendselectimpls_own_error():
    d = make()
    ordered(d, "a", topic="Nowhere")
    answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    ev = d.events("send")[-1]
    assert (ev["outcome"], ev["code"], ev["sharding_key"]) == ("no_route", -1, "a") and "route_queues" not in ev
    assert ev["error"] == "No route info for this topic, Nowhere" + DEFAULT_FAQ_URL


def test_a_route_change_remaps_the_key_and_a_stale_route_keeps_sending_to_the_dead_broker():
    d = make()
    key = "order-1"  # hashCode -1207111310: index 6 of 8 (b2's queue 2), index 2 of 4 (b2's queue 2 alone)
    ordered(d, key)
    answer_route(d, route("b1", "b2"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    d.timer("pollNameServer")
    while d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        answer_route(d, route("b2"))  # b1 left the route: 4 queues
    ordered(d, key, i=2)
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    a, b = d.events("send")
    assert (a["route_queues"], a["broker"], a["queue_id"]) == (8, "b2", 2)
    assert (b["route_queues"], b["broker"], b["queue_id"]) == (4, "b2", 2)
    ordered(d, "a", i=3)  # index 1 of 4: b2's queue 1, on a broker whose channel is down
    d.channel("disconnected", addr="addr-b2")
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], None)
    assert d.events("send")[-1]["outcome"] == "error" and d.events("send.fail")[-1]["attempts"] == 1


def test_one_send_per_key_at_a_time_other_keys_go_on():
    d = make(workload={"topics": ["T"], "rate": 500, "size": 16, "mode": "sync",
                       "ordered": {"keys": 2, "pick": "cycle"}})
    ordered(d, "x")  # the topic's route first, so that the ticks below send at once
    answer_route(d, route("b1", "b2"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    d.advance(6)  # ticks at 2, 4, 6 ms: key 0, key 1, key 0 again (busy: skipped)
    reqs = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    assert sorted(r.frame.fields["properties"]["KEYS"] for r in reqs) == ["pg-1-0:0", "pg-1-0:1"]
    assert d.role.counts["skipped_ticks"] == 1
    first = next(r for r in reqs if r.frame.fields["properties"]["KEYS"] == "pg-1-0:0")
    d.answer(first, response(0))
    d.advance(4)  # key 1 still busy (skipped), key 0 free again: its next message goes
    again = [r for r in d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
             if r.frame.fields["properties"]["KEYS"] == "pg-1-0:0"]
    assert len(again) == 1 and again[0] is not first and d.role.counts["skipped_ticks"] == 2


@settings(max_examples=40, deadline=None)
@given(st.text(st.characters(codec="utf-8")))  # what a JSON line can carry: any text but a lone surrogate
def test_any_key_goes_to_its_hash_queue_and_reaches_the_event_line_intact(key):
    d = make()
    ordered(d, key)
    answer_route(d, route("b1", "b2"))
    [req] = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    want = [MessageQueue("T", b, q) for b in ("b1", "b2") for q in range(4)][hash_index(key, 8)]
    assert (req.addr, req.frame.fields["queueId"]) == (f"addr-{want.broker_name}", want.queue_id)
    d.answer(req, response(0))
    [ev] = d.events("send")
    assert wire_json.loads(wire_json.dumps_line(ev))["sharding_key"] == key
