"""A transactional producer against a fake broker (docs/rocketmq-model.md §9.1): the half, its
local transaction and END_TRANSACTION, and the answers to CHECK_TRANSACTION_STATE."""

from __future__ import annotations

from typing import Any

import pytest

from rmqemu import events
from rmqemu.emulator.protocol import Flag, Frame, RequestCode
from rmqemu.emulator.roles.client.transaction import decode_commit_log_offset
from rmqemu.emulator.roles.common.base import Oneway, Request
from tests.roles.fakes import Driver, response
from tests.roles.test_client_producer import make, route

OFFSET_ID = "7F000001" + "00002A9F" + f"{4242:016X}"  # 127.0.0.1:10911, commit-log offset 4242
COMMIT = {"local": {"commit": 1}}
TRAN = {"TRAN_MSG": "true", "PGROUP": "pg-1"}


def tx_producer(tx: Any = None, seed: int = 7, **workload: Any) -> Driver:
    return make(workload={"topics": ["T"], "rate": 1, **workload, "transaction": COMMIT if tx is None else tx},
                seed=seed)


def first_half(d: Driver) -> Request:
    """The first workload tick's half, once the routes are answered (broker b1: master addr-b1)."""
    d.advance(1000)
    for req in d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        d.answer(req, response(0, body=route("b1")))
    (half,) = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    return half


def stored(code: int = 0, queue_offset: int = 17, msg_id: str = OFFSET_ID, **more: Any) -> Frame:
    return response(code, fields={"msgId": msg_id, "queueId": 1, "queueOffset": queue_offset, **more})


def ends(d: Driver, since: int = 0) -> list[Oneway]:
    return [o for o in d.oneways(since) if o.frame.code == RequestCode.END_TRANSACTION]


def typed(d: Driver, kind: str = "tx.local") -> list[dict[str, Any]]:
    """The events of ``kind``, each checked against the registry's types."""
    lines = d.events(kind)
    for fields in lines:
        assert events.problems({"ts": 1.0, "node": "pg-1-0", "kind": kind, **fields}) == []
    return lines


# ----------------------------------------------------------------------------- the first phase


def test_a_half_carries_tran_msg_and_its_group_and_the_prepared_sys_flag_and_no_delay() -> None:
    d = tx_producer(delay_level=3, keys=True)
    half = first_half(d)
    props = half.frame.fields["properties"]
    assert {k: props[k] for k in TRAN} == TRAN and "DELAY" not in props and props["KEYS"].startswith("key-")
    assert half.frame.fields["sysFlag"] == 4 and half.frame.code == RequestCode.SEND_MESSAGE_V2
    assert (half.timeout_ms, half.addr) == (3000, "addr-b1")  # the ordinary sync send
    d.answer(half, stored())
    (ev,) = typed(d, "send")
    assert ev["transaction"] == "half" and ev["outcome"] == "ok" and "delay_level" not in ev


@pytest.mark.parametrize(("shares", "state", "code"), [
    ({"commit": 1}, "COMMIT_MESSAGE", 8), ({"rollback": 1}, "ROLLBACK_MESSAGE", 12), ({"unknown": 1}, "UNKNOW", 0)])
def test_send_ok_runs_the_local_transaction_and_ends_it_oneway_at_the_master(
        shares: dict[str, int], state: str, code: int) -> None:
    d = tx_producer({"local": shares})
    half = first_half(d)
    uniq = half.frame.fields["properties"]["UNIQ_KEY"]
    d.answer(half, stored(transactionId=uniq))  # rmqemu's broker names it; 4.9.4's end sends none anyway
    (end,) = ends(d)
    assert end.addr == "addr-b1" and end.frame.flag == Flag.ONEWAY
    assert end.frame.fields == {"producerGroup": "pg-1", "tranStateTableOffset": 17, "commitLogOffset": 4242,
                                "commitOrRollback": code, "fromTransactionCheck": False, "msgId": uniq}
    assert typed(d) == [{"msg_id": uniq, "group": "pg-1", "topic": "T", "broker": "b1", "state": state,
                         "from_check": False, "check_times": None, "sent": True, "addr": "addr-b1"}]
    assert d.role.state()["tx_ends"] == 1


def test_the_local_transaction_takes_local_ms_and_holds_the_sending_thread() -> None:
    d = tx_producer({"local": {"commit": 1}, "local_ms": 2500})
    d.answer(first_half(d), stored())
    assert ends(d) == [] and d.events("tx.local") == []
    d.advance(2000)  # two ticks while the local transaction runs: sendMessageInTransaction has not returned
    assert d.role.state()["skipped_ticks"] == 2 and d.pending_to(code=RequestCode.SEND_MESSAGE_V2) == []
    d.advance(500)
    assert [e.frame.fields["commitOrRollback"] for e in ends(d)] == [8]
    d.advance(1000)
    assert len(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)) == 1  # the next message goes


@pytest.mark.parametrize("code", [10, 11, 12])  # FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT
def test_a_stored_but_not_ok_half_is_rolled_back_without_a_local_transaction(code: int) -> None:
    d = tx_producer({"local": {"commit": 1}, "local_ms": 5000})
    d.answer(first_half(d), stored(code))
    (end,) = ends(d)  # at once: no local transaction ran (it would have taken 5 s and committed)
    assert end.addr == "addr-b1" and end.frame.fields["commitOrRollback"] == 12
    assert [(e["state"], e["sent"]) for e in typed(d)] == [("ROLLBACK_MESSAGE", True)]


def test_a_failed_send_ends_nothing() -> None:
    d = tx_producer()
    half = first_half(d)
    d.answer(half, response(13, remark="the message is illegal"))  # MESSAGE_ILLEGAL: no retry
    assert ends(d) == [] and d.events("tx.local") == []
    (fail,) = typed(d, "send.fail")
    assert fail["transaction"] == "half"
    d.advance(1000)
    while reqs := d.pending_to(code=RequestCode.SEND_MESSAGE_V2):  # the next half gets no answer, 3 times
        d.answer(reqs[0], None)
    assert ends(d) == [] and len(d.events("send.fail")) == 2 and len(d.events("send")) == 4


def test_no_master_address_when_the_end_is_due_sends_nothing() -> None:
    d = tx_producer({"local": {"rollback": 1}, "local_ms": 3000})
    d.answer(first_half(d), stored())
    d.timer("pollNameServer")  # the master leaves the route while the local transaction runs
    while reqs := d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        d.answer(reqs[0], response(0, body=route("b1", masters=False)))
    d.advance(3000)
    assert ends(d) == []
    assert [(e["state"], e["sent"], e["addr"]) for e in typed(d)] == [("ROLLBACK_MESSAGE", False, None)]


def test_an_offset_msg_id_that_does_not_decode_sends_no_end() -> None:
    d = tx_producer()
    d.answer(first_half(d), stored(msg_id="not-hex"))
    assert ends(d) == [] and [e["sent"] for e in typed(d)] == [False]


def test_offset_msg_ids_decode_as_message_decoder_does() -> None:
    assert decode_commit_log_offset(OFFSET_ID) == 4242
    assert decode_commit_log_offset("00" * 16 + "00002A9F" + f"{7:016X}") == 7  # a 16-byte (IPv6) store host
    assert decode_commit_log_offset("7F000001" + "00002A9F" + "F" * 16) == -1  # getLong: signed
    for bad in ("", "ABC", OFFSET_ID[:-1], "7F000001" + "00002A9F" + "XYZ" + "0" * 13):
        assert decode_commit_log_offset(bad) is None


def test_the_group_is_heartbeated_to_the_masters() -> None:
    d = tx_producer()
    first_half(d)
    mark = d.mark()
    d.timer("heartbeat")
    beats = [a for a in d.actions[mark:] if isinstance(a, Request) and a.frame.code == RequestCode.HEART_BEAT]
    assert [r.addr for r in beats] == ["addr-b1"]  # the master, where a check comes from; not the slave
    assert {"groupName": "pg-1"} in beats[0].frame.json_body()["producerDataSet"]
