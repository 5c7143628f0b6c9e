"""A transactional producer answers CHECK_TRANSACTION_STATE (docs/rocketmq-model.md §9.1); its draws
are the seed's; a user's text survives the half, the check and the end."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from rmqemu.emulator.protocol import Flag, Frame, RequestCode, decode, encode, encode_body
from rmqemu.emulator.roles.client.transaction_workload import Shares, TransactionWorkload
from rmqemu.emulator.roles.client.workload import OutgoingMessage, ProducerWorkload
from rmqemu.emulator.roles.common.message import body_fields
from tests.roles.fakes import Driver, response
from tests.roles.test_client_producer import make, route
from tests.roles.test_client_transaction import OFFSET_ID, TRAN, ends, first_half, stored, tx_producer, typed
from tests.strategies import bodies, text

CHECK_PROPS = {"UNIQ_KEY": "u-1", "PGROUP": "pg-1", "TRAN_MSG": "true", "REAL_TOPIC": "T", "REAL_QID": "2",
               "TRANSACTION_CHECK_TIMES": "3"}


def check(props: dict[str, str] | None = None, body: bytes = b"hello", **header: Any) -> Frame:
    """CHECK_TRANSACTION_STATE as a broker pushes it: the copy's offsets in the header, the
    message (topic and queue reset to the real ones) as the store's record in the body."""
    fields = {"commitLogOffset": 5000, "tranStateTableOffset": 9, "offsetMsgId": OFFSET_ID, "msgId": "u-1",
              "transactionId": "u-1", **header}
    record = {"topic": "T", "queueId": 2, "queueOffset": 9, **body_fields(body), "commitLogOffset": 5000,
              "properties": CHECK_PROPS if props is None else props, "offsetMsgId": OFFSET_ID, "msgId": "u-1"}
    return Frame(code=RequestCode.CHECK_TRANSACTION_STATE, flag=Flag.ONEWAY, fields=fields, body=encode_body(record))


def push(d: Driver, frame: Frame, addr: str | None = "addr-b1") -> list:
    """The broker's oneway on this producer's channel to it (rmqemu's transport names its address)."""
    return d.deliver(frame, channel=f"out:{addr}", peer="b1-0", addr=addr)


def routed(tx: Any = None, **kw: Any) -> Driver:
    d = tx_producer(tx, **kw)
    d.answer(first_half(d), stored())
    return d


def test_a_check_is_answered_oneway_to_the_checking_broker_with_the_check_headers_offsets() -> None:
    d = routed({"local": {"commit": 1}, "check": {"rollback": 1}})
    mark = d.mark()
    push(d, check())
    (end,) = ends(d, mark)
    assert end.addr == "addr-b1" and end.frame.flag == Flag.ONEWAY
    assert end.frame.fields == {"producerGroup": "pg-1", "tranStateTableOffset": 9, "commitLogOffset": 5000,
                                "commitOrRollback": 12, "fromTransactionCheck": True, "msgId": "u-1",
                                "transactionId": "u-1"}
    assert typed(d)[-1] == {"msg_id": "u-1", "group": "pg-1", "topic": "T", "broker": "b1",
                            "state": "ROLLBACK_MESSAGE", "from_check": True, "check_times": 3, "sent": True,
                            "addr": "addr-b1"}


def test_rocketmqs_string_headers_decode_and_an_unrouted_broker_is_named_by_its_node() -> None:
    d = tx_producer({"check": {"unknown": 1}})  # no route yet: any producer of the group may be asked
    push(d, check(commitLogOffset="5000", tranStateTableOffset="9", transactionId=None), addr="addr-x")
    (end,) = ends(d)
    assert (end.addr, end.frame.fields["commitOrRollback"], end.frame.fields["commitLogOffset"]) == ("addr-x", 0, 5000)
    assert "transactionId" not in end.frame.fields
    assert typed(d)[-1]["broker"] == "b1-0"


@pytest.mark.parametrize(("frame", "why"), [
    (check({**CHECK_PROPS, "PGROUP": "other"}), "group[other]"),
    (check({k: v for k, v in CHECK_PROPS.items() if k != "PGROUP"}), "group[None]"),
    (check(commitLogOffset=None), "commitLogOffset"),
    (check(tranStateTableOffset="x"), "tranStateTableOffset"),
    (Frame(code=RequestCode.CHECK_TRANSACTION_STATE, flag=Flag.ONEWAY,
           fields={"commitLogOffset": 1, "tranStateTableOffset": 1}, body=b"\xff{"), "does not decode"),
    (Frame(code=RequestCode.CHECK_TRANSACTION_STATE, flag=Flag.ONEWAY,
           fields={"commitLogOffset": 1, "tranStateTableOffset": 1}, body=b"[1]"), "decode message failed"),
    (check(props="not\u0001a\u0002map"), "group[None]"),
])
def test_a_check_that_is_not_this_producers_or_does_not_decode_is_not_answered(frame: Frame, why: str) -> None:
    d = routed()
    mark = d.mark()
    actions = push(d, frame)
    assert ends(d, mark) == [] and len(d.events("tx.local")) == 1  # the first phase's only
    assert any(why in getattr(a, "text", "") for a in actions)
    assert push(d, frame) == [] and sum(d.role.state()["tx_checks_dropped"].values()) == 2  # counted, logged once


def test_a_producer_that_is_not_transactional_does_not_answer() -> None:
    d = make(workload={"topics": ["T"], "rate": 1})
    actions = push(d, check())
    assert d.oneways() == [] and any("not transactional" in getattr(a, "text", "") for a in actions)
    assert push(d, check()) == [] and d.role.state()["tx_checks_dropped"] == {"not_transactional": 2}


def test_checks_take_check_ms_each_on_one_thread_in_turn() -> None:
    d = routed({"check": {"commit": 1}, "check_ms": 1000})
    mark = d.mark()
    push(d, check())
    push(d, check({**CHECK_PROPS, "UNIQ_KEY": "u-2"}, tranStateTableOffset=10))
    assert ends(d, mark) == []
    d.advance(1000)
    assert [e.frame.fields["msgId"] for e in ends(d, mark)] == ["u-1"]
    d.advance(1000)
    assert [e.frame.fields["msgId"] for e in ends(d, mark)] == ["u-1", "u-2"]
    assert [e.frame.fields["tranStateTableOffset"] for e in ends(d, mark)] == [9, 10]


def test_the_check_executor_holds_one_running_and_2000_waiting() -> None:
    d = routed({"check_ms": 60000})
    for i in range(2002):
        push(d, check({**CHECK_PROPS, "UNIQ_KEY": f"c{i}"}))
    assert len(d.role.tx.checks) == 2001 and d.role.state()["tx_checks_dropped"] == {"queue_full": 1}
    mark = d.mark()
    d.advance(120000)
    assert [e.frame.fields["msgId"] for e in ends(d, mark)] == ["c0", "c1"]


# ----------------------------------------------------------------------------- draws


def outcomes(seed: int, n: int = 12) -> tuple[list[str], list[str]]:
    """The local states of a producer's first ``n`` halves (every send SEND_OK) and its answers to
    ``n`` checks."""
    d = tx_producer({"local": {"commit": 0.5, "rollback": 0.3, "unknown": 0.2},
                     "check": {"commit": 0.4, "rollback": 0.4, "unknown": 0.2}}, seed=seed)
    d.answer(first_half(d), stored())
    for _ in range(n - 1):
        d.advance(1000)
        d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], stored())
    for i in range(n):
        push(d, check({**CHECK_PROPS, "UNIQ_KEY": f"c{i}"}))
    states = [(e["from_check"], e["state"]) for e in typed(d)]
    return [s for c, s in states if not c], [s for c, s in states if c]


def test_the_same_seed_draws_the_same_outcomes_and_another_seed_others() -> None:
    assert outcomes(3) == outcomes(3)
    assert outcomes(3) != outcomes(4)
    local, checks = outcomes(3, n=12)
    assert len(local) == len(checks) == 12 and len(set(local)) > 1 and len(set(checks)) > 1


def test_shares_are_drawn_in_their_proportions() -> None:
    import random

    rng = random.Random(1)
    shares = Shares(0.7, 0.1, 0.2)
    drawn = [shares.draw(rng) for _ in range(20000)]
    for state, share in (("COMMIT_MESSAGE", 0.7), ("ROLLBACK_MESSAGE", 0.1), ("UNKNOW", 0.2)):
        assert abs(drawn.count(state) / len(drawn) - share) < 0.02
    assert {Shares(0.0, 1.0, 0.0).draw(rng) for _ in range(50)} == {"ROLLBACK_MESSAGE"}


# ----------------------------------------------------------------------------- a user's text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies(), key=text(min_size=1), uniq=text(min_size=1))
def test_any_body_and_key_survive_the_half_and_any_unique_key_the_check(body: str | bytes, key: str,
                                                                         uniq: str) -> None:
    d = tx_producer(rate=0)  # no workload: this one message only
    raw = (body.encode() if isinstance(body, str) else body) or b"x"
    d.run(lambda now: d.role.send_in_transaction(OutgoingMessage("T", raw, {"UNIQ_KEY": uniq, "KEYS": key}), now))
    while reqs := d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        d.answer(reqs[0], response(0, body=route("b1")))
    sends = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    wire = decode(encode(sends[-1].frame))
    assert wire.body == raw and wire.fields["properties"] == {"UNIQ_KEY": uniq, "KEYS": key, **TRAN}
    mark = d.mark()
    d.answer(sends[-1], stored())
    assert ends(d, mark)[-1].frame.fields["msgId"] == uniq
    mark = d.mark()
    push(d, check({**CHECK_PROPS, "UNIQ_KEY": uniq, "KEYS": key}, body=raw))
    (end,) = ends(d, mark)
    assert decode(encode(end.frame)).fields["msgId"] == uniq and typed(d)[-1]["msg_id"] == uniq


# ----------------------------------------------------------------------------- the workload's shape


@pytest.mark.parametrize(("transaction", "extra", "error"), [
    ({"local": {"comit": 1}}, {}, "workload.transaction.local: comit: unknown outcome (known: commit, rollback, "
                                  "unknown)"),
    ({"check": {"commit": 0.5}}, {}, "workload.transaction.check: the shares must add up to 1, got 0.5 (commit 0.5 "
                                     "+ rollback 0 + unknown 0)"),
    ({"local": {"commit": -1, "rollback": 2}}, {}, "workload.transaction.local: commit: must be a share from 0 to 1, "
                                                  "got '-1'"),
    ({"local": {"commit": True}}, {}, "workload.transaction.local: commit: must be a share from 0 to 1, got 'True'"),
    ({"local": [1]}, {}, "workload.transaction.local: expected a mapping of shares {commit, rollback, unknown}"),
    ({"local_ms": -5}, {}, "workload.transaction.local_ms: must be cluster ms from 0 to 3.6e+06, got '-5'"),
    ({"checks": {}}, {}, "workload.transaction: unknown key checks (known: local, check, local_ms, check_ms)"),
    ("yes", {}, "workload.transaction: expected a mapping {local, check, local_ms, check_ms}, got 'yes'"),
    ({}, {"mode": "async"}, "workload.transaction: needs mode: sync, batch: 1 and no ordered"),
    ({}, {"batch": 2}, "workload.transaction: needs mode: sync, batch: 1 and no ordered"),
    ({}, {"ordered": True}, "got mode: sync, batch: 1, ordered"),
])
def test_a_node_specs_transaction_is_checked_with_its_field(transaction: Any, extra: dict, error: str) -> None:
    with pytest.raises(ValueError) as info:
        ProducerWorkload.from_dict({"topics": ["T"], **extra, "transaction": transaction})
    assert error in str(info.value)


def test_a_node_specs_transaction_defaults_to_commit_and_no_wait() -> None:
    w = ProducerWorkload.from_dict({"topics": ["T"], "transaction": {"local": {"rollback": 0.25, "unknown": 0.75}}})
    assert w.transaction == TransactionWorkload(Shares(0.0, 0.25, 0.75), Shares(), 0.0, 0.0)
    assert TransactionWorkload.from_dict(w.transaction.to_dict()) == w.transaction

