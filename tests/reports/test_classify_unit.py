"""Send classification (``reports.misrouted.classify_sends``) on tiny inline interval tables:
one minimal case per reason, the ``[start, end)`` boundaries (a send at exactly a kill's ``ts``
is dead, one a hair before is not), the run-end lookup, and the order in which reasons win.

The world unless a test says otherwise: run ``[0, 1000)``; broker-a's master ``broker-a-0`` and
slave ``broker-a-1`` are alive throughout and host topic ``T`` with 4 write queues on the
master; nothing is paused, cut off or auto-creating.
"""
from __future__ import annotations

from typing import Any

from reports.misrouted import classify_sends, misrouted_by_reason, misrouted_over_time
from tests.reports.frames import frame, rows

RUN_END = 1000.0
SENDS = ("msg_id string, producer string, ts double, topic string, broker string, broker_id int, "
         "queue_id int, outcome string")
SENDS_COLUMNS = [c.split()[0] for c in SENDS.split(", ")]
NODE_IV = "node string, start double, end double"
TABLES: dict[str, str] = {
    "lives": NODE_IV, "pauses": NODE_IV, "autocreate": NODE_IV,
    "partitions": "a string, b string, start double, end double",
    "hosts": "node string, topic string, start double, end double",
    "write_queues": "node string, topic string, write_queues int, start double, end double",
}
WORLD: dict[str, list[tuple[Any, ...]]] = {
    "lives": [("broker-a-0", 0, RUN_END), ("broker-a-1", 0, RUN_END), ("pg-1-0", 0, RUN_END)],
    "pauses": [], "autocreate": [], "partitions": [],
    "hosts": [("broker-a-0", "T", 0, RUN_END), ("broker-a-1", "T", 0, RUN_END)],
    "write_queues": [("broker-a-0", "T", 4, 0, RUN_END)],
}


def send(msg_id: str, ts: float, broker: str | None = "broker-a", *, topic: str = "T", queue_id: int | None = 0,
         broker_id: int | None = None, producer: str = "pg-1-0") -> tuple[Any, ...]:
    return (msg_id, producer, ts, topic, broker, broker_id, queue_id, "ok")


def classified(spark: Any, sends: list[tuple[Any, ...]], run_end: float | None = RUN_END,
               **tables: list[tuple[Any, ...]]) -> Any:
    """``classify_sends`` of ``sends`` in :data:`WORLD`, ``tables`` replacing its tables of the
    same name."""
    given = {name: frame(spark, TABLES[name], tables.get(name, WORLD[name])) for name in TABLES}
    nodes = frame(spark, "node string, role string, broker string, broker_id int", [
        ("broker-a-0", "broker", "broker-a", 0), ("broker-a-1", "broker", "broker-a", 1),
        ("pg-1-0", "producer", None, None)])
    return classify_sends(frame(spark, SENDS, sends), nodes, run_end=run_end, **given)


def classify(spark: Any, sends: list[tuple[Any, ...]], run_end: float | None = RUN_END,
             **tables: list[tuple[Any, ...]]) -> dict[str, tuple[Any, Any, Any]]:
    """``msg_id -> (target, target_id, reason)`` (see :func:`classified`)."""
    got = rows(classified(spark, sends, run_end, **tables), "msg_id", "target", "target_id", "reason")
    assert len(got) == len(sends)  # one row per send, whatever the lookups match
    return {r[0]: tuple(r[1:]) for r in got}


def reasons(spark: Any, sends: list[tuple[Any, ...]], run_end: float | None = RUN_END,
            **tables: list[tuple[Any, ...]]) -> dict[str, Any]:
    """``msg_id -> reason``."""
    return {m: r for m, (_, _, r) in classify(spark, sends, run_end, **tables).items()}


def test_a_well_routed_send_has_no_reason_and_only_three_columns_are_added(spark):
    out = classified(spark, [send("ok", 100)])
    assert out.columns == [*SENDS_COLUMNS, "run", "target_id", "target", "reason"]  # run: frames.with_run
    assert rows(out, "msg_id", "target", "target_id", "reason") == [("ok", "broker-a-0", 0, None)]


def test_a_send_without_a_broker_is_not_an_attempt_at_any_broker(spark):
    got = classify(spark, [send("nr", 100, None, queue_id=None)], lives=[])  # nothing alive: still no reason
    assert got == {"nr": (None, 0, None)}


def test_dead_from_exactly_the_kill_until_the_restart(spark):
    got = reasons(spark, [send("before", 499.999), send("at_kill", 500), send("down", 600), send("back", 800)],
                  lives=[("broker-a-0", 0, 500), ("broker-a-0", 800, RUN_END)])
    assert got == {"before": None, "at_kill": "dead", "down": "dead", "back": None}


def test_a_broker_missing_from_the_node_table_is_named_by_the_rule_and_dead(spark):
    assert classify(spark, [send("z", 100, "broker-z")]) == {"z": ("broker-z-0", 0, "dead")}


def test_a_send_at_the_run_end_is_looked_up_just_before_it(spark):
    assert classify(spark, [send("last", RUN_END)]) == {"last": ("broker-a-0", 0, None)}
    assert classify(spark, [send("last", RUN_END)], run_end=None) == {"last": ("broker-a-0", 0, "dead")}


def test_paused_within_the_pause_only(spark):
    got = reasons(spark, [send("before", 199.5), send("start", 200), send("end", 300)],
                  pauses=[("broker-a-0", 200, 300)])
    assert got == {"before": None, "start": "paused", "end": None}


def test_partitioned_on_the_cut_link_either_way_round(spark):
    # links are stored as the pair (a <= b): "a-prod" sorts before the broker, "pg-1-0" after it
    got = reasons(spark, [send("pg", 450), send("other", 450, producer="pg-2-0"),
                          send("a", 450, producer="a-prod"), send("after", 500)],
                  partitions=[("broker-a-0", "pg-1-0", 400, 500), ("a-prod", "broker-a-0", 400, 500)])
    assert got == {"pg": "partitioned", "other": None, "a": "partitioned", "after": None}


def test_a_send_to_a_slave_is_not_master(spark):
    assert classify(spark, [send("slave", 100, broker_id=1)]) == {"slave": ("broker-a-1", 1, "not_master")}


def test_no_topic_on_a_master_that_neither_hosts_nor_auto_creates_it(spark):
    assert classify(spark, [send("nt", 100, topic="U")]) == {"nt": ("broker-a-0", 0, "no_topic")}


def test_bad_queue_at_or_past_the_write_queue_count_of_the_latest_line(spark):
    got = reasons(spark, [send("q3", 100, queue_id=3), send("q4", 100, queue_id=4), send("q4_later", 600, queue_id=4)],
                  write_queues=[("broker-a-0", "T", 4, 0, 500), ("broker-a-0", "T", 8, 500, RUN_END)])
    assert got == {"q3": None, "q4": "bad_queue", "q4_later": None}


def test_tbw102_lends_its_write_queue_count_only_under_auto_create(spark):
    sends = [send("q7", 100, topic="U", queue_id=7), send("q8", 100, topic="U", queue_id=8)]
    auto = [("broker-a-0", 0, RUN_END)]
    tbw = [*WORLD["write_queues"], ("broker-a-0", "TBW102", 8, 0, RUN_END)]
    got = reasons(spark, sends, autocreate=auto, write_queues=tbw)
    assert got == {"q7": None, "q8": "bad_queue"}
    got = reasons(spark, sends, autocreate=auto)  # no TBW102 line: the count is unknown
    assert got == {"q7": None, "q8": None}
    # a TBW102 line lends its count only to a node that auto-creates (here T has no line at all)
    got = reasons(spark, [send("t8", 100, queue_id=8)], write_queues=[("broker-a-0", "TBW102", 8, 0, RUN_END)])
    assert got == {"t8": None}


def test_the_first_matching_reason_wins(spark):
    """dead > paused > partitioned > not_master > no_topic > bad_queue: the slave is down
    until 200, paused until 300, cut off until 400; every send is also to a slave, of a
    topic it does not host, on a queue that does not exist."""
    wrong = dict(topic="U", queue_id=99, broker_id=1)
    got = reasons(spark, [send("t100", 100, **wrong), send("t250", 250, **wrong), send("t350", 350, **wrong),
                          send("t450", 450, **wrong), send("master_u", 450, topic="U", queue_id=99),
                          send("master_t", 450, queue_id=99)],
                  lives=[("broker-a-0", 0, RUN_END), ("broker-a-1", 200, RUN_END)],
                  pauses=[("broker-a-1", 0, 300)], partitions=[("broker-a-1", "pg-1-0", 0, 400)])
    assert got == {
        "t100": "dead", "t250": "paused", "t350": "partitioned", "t450": "not_master",
        "master_u": "no_topic", "master_t": "bad_queue"}


def test_misrouted_counts_by_reason_and_over_time(spark):
    classified = frame(spark, "ts double, reason string, outcome string", [
        (100, None, "ok"), (150, "dead", "timeout"), (260, "dead", "timeout"), (270, "dead", "error"),
        (299.9, "paused", "timeout")])
    assert rows(misrouted_by_reason(classified), "reason", "outcome", "sends") == [
        ("dead", "error", 1), ("dead", "timeout", 2), ("paused", "timeout", 1)]
    # bins of 100 ms from the run start 60: 150 is in bin 0 [60, 160), 260 opens bin 2 [260, 360)
    assert rows(misrouted_over_time(classified, run_start=60.0, bin_ms=100.0), "bin", "reason", "sends") == [
        (0, "dead", 1), (2, "dead", 2), (2, "paused", 1)]
