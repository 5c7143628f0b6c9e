"""Delayed messages judged on time, late, early or pending (reports.core.delays, docs/design.md §7
"Delays and retries"), on inline lines at scale 0.01: a cluster ms is 0.01 wall ms, the
tolerance of 1000 cluster ms is 10 wall ms."""
from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rmqemu.reports.core import delays
from rmqemu.reports.core.frame import events

SCALE = 0.01
T, R = "T", "%RETRY%cg"


def park(ts: float, offset: int, msg: str, topic: str = T, level: int = 2, skew: float = 0.0,
         delay_ms: float = 5000.0) -> dict[str, Any]:
    return {"ts": ts, "local_ms": ts + skew, "node": "broker-a-0", "kind": "delay.park", "msg_id": msg,
            "topic": topic, "queue_id": 0, "broker": "broker-a", "level": level, "offset": offset,
            "due_ms": 9e6, "delay_ms": delay_ms, "reconsume_times": 0 if topic == T else 1}


def deliver(ts: float, offset: int, msg: str, lateness_ms: float, topic: str = T, level: int = 2,
            skew: float = 0.0) -> dict[str, Any]:
    return {"ts": ts, "local_ms": ts + skew, "node": "broker-a-0", "kind": "delay.deliver", "msg_id": msg,
            "topic": topic, "queue_id": 0, "broker": "broker-a", "level": level, "offset": offset, "due_ms": 9e6,
            "reconsume_times": 0 if topic == T else 1, "lateness_ms": lateness_ms, "queue_offset": offset,
            "offset_msg_id": f"o-{msg}"}


def send(ts: float, msg: str, outcome: str = "ok", level: int | None = 2) -> dict[str, Any]:
    line = {"ts": ts, "node": "pg-1-0", "kind": "send", "msg_id": msg, "topic": T, "broker": "broker-a",
            "queue_id": 0, "attempt": 1, "outcome": outcome, "code": 0, "latency_ms": 1.0}
    return {**line, "delay_level": level} if level else line


def lines() -> pd.DataFrame:
    """Six delayed messages on T (due 50 wall ms after their park) and two retries on R:

    e1 delivered 1 wall ms late, and again after a restart; e2 30 wall ms late; e3 by a master whose
    clock was set 20 host ms forward while it held it: 0 late by its clock, 20 wall ms early in
    true time; e4 never delivered though due at 1053; e5 never, due at 5600; e6 on a master whose
    clock is 500 host ms ahead throughout: on time. On R, one parked and delivered on time, one
    delivered without its park line (torn by a kill)."""
    return events([
        send(990, "m1"), send(991, "m1"), *[send(991 + i, f"m{i}") for i in range(2, 7)],
        send(999, "m7", "timeout"), send(999, "p1", level=None),
        park(1000, 0, "m1"), park(1001, 1, "m2"), park(1002, 2, "m3"), park(1003, 3, "m4"),
        park(5000, 4, "m5", level=5, delay_ms=60000.0), park(1004, 5, "m6", skew=500.0),
        park(1010, 0, "r1", R, level=3),
        deliver(1051, 0, "m1", 100.0), deliver(1081, 1, "m2", 3000.0), deliver(1032, 2, "m3", 0.0, skew=20.0),
        deliver(1054, 5, "m6", 0.0, skew=500.0), deliver(1300, 0, "m1", 24900.0),
        deliver(1110, 0, "r1", 0.0, R, level=3), deliver(1120, 1, "r2", 50.0, R, level=3),
    ])


@pytest.fixture(scope="module")
def entries() -> pd.DataFrame:
    return delays.entries(delays.delay_lines(lines()), SCALE)


def test_each_entry_is_judged_by_its_first_delivery_in_true_time(entries: pd.DataFrame) -> None:
    got = {(r.topic, r.msg_id): (r.status, r.deliveries, None if pd.isna(r.lateness_ms) else round(r.lateness_ms, 6))
           for r in entries.itertuples()}
    assert got == {
        (T, "m1"): ("on_time", 2, 1.0), (T, "m2"): ("late", 1, 30.0), (T, "m3"): ("early", 1, -20.0),
        (T, "m4"): ("pending", 0, None), (T, "m5"): ("pending", 0, None), (T, "m6"): ("on_time", 1, 0.0),
        (R, "r1"): ("on_time", 1, 0.0), (R, "r2"): ("on_time", 1, 0.5)}
    due = dict(zip(entries["msg_id"], entries["due"].round(6), strict=True))
    assert (due["m1"], due["m2"], due["m3"], due["m4"], due["m5"]) == (1050.0, 1051.0, 1052.0, 1053.0, 5600.0)
    assert entries.loc[entries["msg_id"] == "r2", "parked"].tolist() == [False]


def test_per_topic_counts_and_lateness(entries: pd.DataFrame) -> None:
    got = delays.by_topic(entries, delays.delay_lines(lines()), SCALE, until=2000.0)
    assert list(got.columns) == list(delays.TOPIC_COLUMNS)
    t = got.set_index("topic").round(6)
    # sent: m1..m6 (m1 twice, m7 timed out, p1 asked no delay); overdue: m4 (m5 is due after the end)
    assert t.loc[T, list(delays.TOPIC_COLUMNS[1:-4])].tolist() == [6, 6, 4, 2, 1, 1, 2, 1, 1]
    # first deliveries' lateness, wall ms: -20, 0, 1, 30
    assert t.loc[T, ["lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms", "lateness_min_ms"]].tolist() == [
        0.5, 29.13, 30.0, -20.0]
    assert t.loc[R, list(delays.TOPIC_COLUMNS[1:-4])].tolist() == [0, 1, 2, 2, 0, 0, 0, 0, 0]
    total = delays.totals(entries, got).iloc[0]
    assert (total["parked"], total["delivered"], total["pending"], total["lateness_max_ms"]) == (7, 6, 2, 30.0)
    assert delays.by_topic(entries, delays.delay_lines(lines()), SCALE, until=6000.0)["overdue"].sum() == 2


def test_a_fault_counts_the_late_and_the_undelivered_due_in_its_window(entries: pd.DataFrame) -> None:
    rows = pd.DataFrame({"fault_id": ["f1", "f2", "f3"], "start": [1051.0, 1100.0, 1000.0],
                         "impact_end": [1060.0, 1200.0, 1051.0]})
    got = delays.fault_lateness(rows, entries, SCALE, until=2000.0)
    # f1 holds m2 (due 1051, 30 late) and m4 (due 1053, never delivered); m3 (early) and m1 (on time) are not
    assert got[["fault_id", "late_deliveries", "late_max_ms"]].round(6).values.tolist() == [
        ["f1", 2, 30.0], ["f2", 0, 0.0], ["f3", 0, 0.0]]


def test_messages_not_delivered_by_run_stop(entries: pd.DataFrame) -> None:
    assert sorted(delays.undelivered(entries, 2000.0)) == ["m4", "m5"]  # retries (r1, r2) are not sent messages
    assert sorted(delays.undelivered(entries, 1060.0)) == ["m2", "m4", "m5"]  # m2 came at 1081
    assert sorted(delays.undelivered(entries, None)) == ["m4", "m5"]


def test_a_run_without_delays_has_empty_tables() -> None:
    ev = events([send(1, "m1", level=None)])
    ent = delays.entries(delays.delay_lines(ev), SCALE)
    got = delays.by_topic(ent, delays.delay_lines(ev), SCALE, until=10.0)
    assert ent.empty and got.empty and list(got.columns) == list(delays.TOPIC_COLUMNS)
    assert delays.undelivered(ent, 10.0).empty
    assert delays.totals(ent, got).iloc[0]["parked"] == 0


def test_ids_that_differ_after_a_nul_are_sent_messages_of_their_own() -> None:
    """User data (docs/design.md §6): "m\\0a" and "m\\0b" are two messages, not one."""
    ev = events([send(1, "m\0a"), send(2, "m\0b"), send(3, "m\0a")])
    ent = delays.entries(delays.delay_lines(ev), SCALE)
    assert delays.by_topic(ent, delays.delay_lines(ev), SCALE, until=10.0).set_index("topic").loc[T, "sent"] == 2
