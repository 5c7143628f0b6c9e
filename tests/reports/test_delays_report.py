"""Delays, retries and loss that only means loss in a run's metrics.json and report.html (docs/design.md
§7 "Delays and retries", "Consumption"): a master killed while it held delayed messages, a retry, and a
real client's group that left before the end."""
from __future__ import annotations

from typing import Any

import pytest

from rmqemu.reports.html import render
from tests.reports.runlog import by, ev, exit_, fault, metrics_of, send, start, topic, write_run

T, U, R, REAL = "T", "U", "%RETRY%cg-1", "cg-real"
DELAY = {2: 5000.0, 3: 10000.0}  # cluster ms: 50 and 100 wall ms at scale 0.01


def parked(ts: float, msg: str, offset: int, level: int = 2, topic_: str = T) -> dict[str, Any]:
    return ev(ts, "broker-a-0", "delay.park", local_ms=ts, msg_id=msg, topic=topic_, queue_id=0, broker="broker-a",
              level=level, offset=offset, due_ms=0.0, delay_ms=DELAY[level], reconsume_times=int(topic_ == R))


def delivered(ts: float, msg: str, offset: int, late_wall_ms: float, level: int = 2, topic_: str = T) -> dict:
    return ev(ts, "broker-a-0", "delay.deliver", local_ms=ts, msg_id=msg, topic=topic_, queue_id=0,
              broker="broker-a", level=level, offset=offset, due_ms=0.0, reconsume_times=int(topic_ == R),
              lateness_ms=late_wall_ms / 0.01, queue_offset=offset, offset_msg_id=f"o-{msg}")


def consume(ts: float, node: str, group: str, msg_ids: list[str], topic_: str = T, **more: Any) -> dict[str, Any]:
    return ev(ts, node, "consume", group=group, topic=topic_, broker="broker-a", queue_id=0, msg_ids=msg_ids, **more)


def member(ts: float, group: str, change: str, remaining: int) -> dict[str, Any]:
    return ev(ts, "broker-a-0", "broker.consumer", group=group, client="client@9" if group == REAL else "cg-1-0",
              client_id="c", change=change, remaining=remaining, real=group == REAL)


def scenario() -> tuple[list[dict], list[dict]]:
    """d0..d2 sent with delay level 2 (due 50 wall ms after their park); broker-a-0 killed at 1020
    and restarted at 1200, so d1 and d2 (due at 1051, 1052) arrive at 1210, 159 and 158 wall ms late.
    cg-1 fails d0 once: back through %RETRY%cg-1 (level 3) on time, then consumed. The real client's
    group cg-real leaves at 1500; m1 (T) and u1 (U, which only it subscribes) come after. d3 is
    sent with level 2 just before run.stop: still parked at the end."""
    events = [
        start(0, "broker-a-0", "broker"), start(0, "pg-1-0", "producer"), start(0, "cg-1-0", "consumer"),
        topic(0, "broker-a-0", T), topic(0, "broker-a-0", U), member(10, "cg-1", "joined", 1),
        member(10, REAL, "joined", 1),
        *[send(899 + i, "pg-1-0", T, "broker-a", msg_id=f"d{i}", delay_level=2) for i in range(3)],
        parked(900, "d0", 0), parked(1001, "d1", 1), parked(1002, "d2", 2),
        delivered(950, "d0", 0, 0.0), consume(951, "cg-1-0", "cg-1", [], reconsume_later=["d0"]),
        consume(951, "client@9", REAL, ["d0"]),
        ev(952, "broker-a-0", "retry.back", group="cg-1", topic=T, msg_id="d0", origin_msg_id="o-d0",
           reconsume_times=1, max_reconsume_times=16, outcome="retry", level=3, via="send_back", client="cg-1-0",
           offset_msg_id="r-d0"),
        parked(952, "d0", 0, level=3, topic_=R),
        exit_(1020, "broker-a-0", signal=9), start(1200, "broker-a-0", "broker"),
        member(1205, "cg-1", "joined", 1), member(1205, REAL, "joined", 1),
        delivered(1210, "d1", 1, 159.0), delivered(1210, "d2", 2, 158.0), delivered(1210, "d0", 0, 8.0, 3, R),
        consume(1211, "cg-1-0", "cg-1", ["d1", "d2"]), consume(1211, "client@9", REAL, ["d1", "d2"]),
        consume(1212, "cg-1-0", "cg-1", ["d0"], R), member(1500, REAL, "left", 0),
        send(1600, "pg-1-0", T, "broker-a", msg_id="m1"), send(1601, "pg-1-0", U, "broker-a", msg_id="u1"),
        consume(1610, "cg-1-0", "cg-1", ["m1"]), consume(900, "client@9", REAL, [], U),
        send(2990, "pg-1-0", T, "broker-a", msg_id="d3", delay_level=2), parked(2991, "d3", 3),
        *[exit_(3100, n, code=0) for n in ("broker-a-0", "pg-1-0", "cg-1-0")],
    ]
    faults = [fault(1020, "fault.start", "f1", "kill", ["broker-a-0"]),
              fault(1200, "fault.end", "f1", "kill", ["broker-a-0"]),
              {"ts": 3000, "node": "launcher", "kind": "run.stop"}]
    return events, faults


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return metrics_of(write_run(tmp_path_factory.mktemp("delays"), *scenario()))


def test_delays_on_time_late_and_the_kill_that_made_them_late(metrics: dict[str, Any]) -> None:
    d = metrics["delays"]
    assert (d["tolerance_ms"], d["tolerance_cluster_s"]) == (pytest.approx(10.0), 1.0)
    assert [d[k] for k in ("sent", "parked", "delivered", "on_time", "late", "early", "pending", "overdue")] == [
        4, 5, 4, 2, 2, 0, 1, 0]
    assert d["lateness_max_ms"] == pytest.approx(159.0) and d["lateness_max_cluster_s"] == pytest.approx(15.9)
    t, r = by(d["by_topic"], topic=T), by(d["by_topic"], topic=R)
    assert (t["sent"], t["on_time"], t["late"], t["pending"], r["sent"], r["on_time"]) == (4, 1, 2, 1, 0, 1)
    [f1] = metrics["staleness"]["faults"]
    assert (f1["late_deliveries"], f1["late_max_ms"]) == (2, pytest.approx(159.0))


def test_retries_count_by_reconsume_times_and_are_not_consumed_unacked(metrics: dict[str, Any]) -> None:
    r = metrics["retries"]
    assert (r["taken_back"], r["retried"], r["dead_lettered"], r["deliveries"]) == (1, 1, 0, 1)
    assert r["by_reconsume_times"] == [{"group": "cg-1", "topic": T, "reconsume_times": 1, "retried": 1,
                                        "dead_lettered": 0, "dropped": 0}]
    c = metrics["consumption"]
    assert [x["topic"] for x in c["by_topic"]] == [T, U] and c["consumed_unacked"] == 0


def test_a_group_whose_consumers_left_is_gone_and_a_parked_message_delayed_not_lost(metrics: dict[str, Any]) -> None:
    c = metrics["consumption"]
    assert (c["lost"], c["gone"], c["delayed"], c["lost_per_group"], c["gone_per_group"]) == (0, 1, 1, 0, 2)
    assert by(c["groups"], group=REAL, topic=T) == {"group": REAL, "topic": T, "expected": 5, "consumed": 3,
                                                    "lost": 0, "gone": 1, "dead_lettered": 0, "retrying": 0,
                                                    "delayed": 1}
    assert (by(c["groups"], group="cg-1", topic=T)["consumed"], by(c["by_topic"], topic=U)["gone"]) == (4, 1)


def test_the_page_shows_them(metrics: dict[str, Any], tmp_path) -> None:
    page = render(metrics, [], tmp_path, [], [])
    for text in ("Delayed messages per topic", "Retries by reconsumeTimes", "delayed or timed messages late",
                 "gone with their consumers", "%RETRY%cg-1", "Delayed messages parked"):
        assert text in page, text
