"""Retries by reconsumeTimes and the DLQ (reports.core.retries, docs/design.md §7 "Delays and
retries"), on inline lines: a message that keeps its UNIQ_KEY and one whose every copy has a new
id (ali-ons)."""
from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.reports.core import retries
from rmqemu.reports.core.frame import events

T = "T"


def back(ts: float, msg: str, times: int, outcome: str, new: str | None, group: str = "cg",
         via: str = "send_back") -> dict[str, Any]:
    return {"ts": ts, "node": "broker-a-0", "kind": "retry.back", "group": group, "topic": T, "msg_id": msg,
            "origin_msg_id": "o", "reconsume_times": times, "max_reconsume_times": 2 if group == "cg" else 16,
            "outcome": outcome, "level": 2 + times if outcome == "retry" else None, "via": via,
            "client": "cg-1-0", "offset_msg_id": new}


def consume(ts: float, topic: str, msg_ids: list[str]) -> dict[str, Any]:
    return {"ts": ts, "node": "cg-1-0", "kind": "consume", "group": "cg", "topic": topic, "broker": "broker-a",
            "queue_id": 0, "msg_ids": msg_ids}


def lines() -> pd.DataFrame:
    """``a`` (a UNIQ_KEY) retried twice then dead-lettered, its DLQ line written twice (a master
    restarted); ``b0`` (ali-ons: each copy a new id) retried once, then dead-lettered through the
    client's own send; ``c`` dropped by cg2, which has no retry queue."""
    return events([
        back(1, "a", 1, "retry", "x1"), back(2, "b0", 1, "retry", "b1"), back(3, "a", 2, "retry", "x2"),
        back(4, "b1", 2, "dlq", "b2", via="send"), back(5, "a", 3, "dlq", "x3"), back(6, "a", 3, "dlq", "x3"),
        back(7, "c", 1, "dropped", None, group="cg2"),
        consume(8, "%RETRY%cg", ["a", "b1"]), consume(9, "%RETRY%cg", ["a"]), consume(9, T, ["z"]),
        {"ts": 10, "node": "broker-a-0", "kind": "broker.consumer", "group": "cg", "client": "cg-1-0",
         "client_id": "c@1", "change": "joined", "remaining": 1, "real": False},
    ])


def test_every_copy_is_named_by_the_id_first_acked() -> None:
    back_ = retries.backs(retries.retry_lines(lines()))
    ids = pd.Series(["b2", "b1", "b0", "a", "x3", "z", None], dtype=object)
    assert retries.root_ids(ids, back_).tolist() == ["b0", "b0", "b0", "a", "a", "z", None]


def test_retries_per_reconsume_times_and_the_dlq() -> None:
    back_ = retries.backs(retries.retry_lines(lines()))
    got = retries.by_reconsume_times(back_)
    assert list(got.columns) == list(retries.TIMES_COLUMNS)
    assert sorted(got.itertuples(index=False, name=None)) == [
        ("cg", T, 1, 2, 0, 0), ("cg", T, 2, 1, 1, 0), ("cg", T, 3, 0, 2, 0), ("cg2", T, 1, 0, 0, 1)]
    assert retries.dead_letters(back_).values.tolist() == [["cg", T, 2]]  # a (once) and b0
    total = retries.totals(back_, lines()).iloc[0].to_dict()
    assert total == {"taken_back": 7, "retried": 3, "dead_lettered": 2, "dropped": 1, "messages": 3,
                     "via_send": 1, "deliveries": 3}


def test_a_run_without_retries_has_empty_tables() -> None:
    ev = events([consume(1, T, ["m"])])
    back_ = retries.backs(retries.retry_lines(ev))
    assert retries.by_reconsume_times(back_).empty and retries.dead_letters(back_).empty
    assert retries.totals(back_, ev).iloc[0].to_dict() == {
        "taken_back": 0, "retried": 0, "dead_lettered": 0, "dropped": 0, "messages": 0, "via_send": 0, "deliveries": 0}


@settings(max_examples=40, deadline=None)
@given(chain=st.lists(st.text(min_size=1, max_size=10), min_size=2, max_size=8, unique=True),
       group=st.text(min_size=1, max_size=10))
def test_any_ids_follow_back_to_the_first(chain: list[str], group: str) -> None:
    """ids are user data (any Unicode): each copy of a chain of retries (ali-ons: a new id each) is
    named by the chain's first id, and the DLQ counts the message once."""
    hops = [back(i, a, i + 1, "dlq" if i == len(chain) - 2 else "retry", b, group=group)
            for i, (a, b) in enumerate(zip(chain, chain[1:], strict=False))]
    back_ = retries.backs(retries.retry_lines(events(hops)))
    assert retries.root_ids(pd.Series(chain[::-1], dtype=object), back_).tolist() == [chain[0]] * len(chain)
    assert retries.dead_letters(back_).values.tolist() == [[group, T, 1]]
