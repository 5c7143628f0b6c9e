"""Send classification (``reports.core.sends.classify_sends``, docs/design.md §7 "Misrouted
sends") on tiny inline interval tables: one minimal case per reason, the ``[start, end)``
boundaries, the run-end lookup, the order in which reasons win; plus empty inputs and the
interval lookup itself.

The world unless a test says otherwise: run ``[0, 1000)``; broker-a's master ``broker-a-0`` and
slave ``broker-a-1`` are alive throughout and host topic ``T`` with 4 write queues on the
master; nothing is paused, cut off or auto-creating.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rmqemu.reports.core.sends import classify_sends, misrouted_by_reason, misrouted_over_time, point_lookup

RUN_END = 1000.0
SENDS_COLUMNS = ["msg_id", "producer", "ts", "topic", "broker", "broker_id", "queue_id", "outcome"]
TABLES: dict[str, list[str]] = {
    "lives": ["node", "start", "end"], "pauses": ["node", "start", "end"], "autocreate": ["node", "start", "end"],
    "partitions": ["a", "b", "start", "end"],
    "hosts": ["node", "topic", "start", "end"],
    "write_queues": ["node", "topic", "write_queues", "start", "end"],
}
WORLD: dict[str, list[tuple[Any, ...]]] = {
    "lives": [("broker-a-0", 0, RUN_END), ("broker-a-1", 0, RUN_END), ("pg-1-0", 0, RUN_END)],
    "pauses": [], "autocreate": [], "partitions": [],
    "hosts": [("broker-a-0", "T", 0, RUN_END), ("broker-a-1", "T", 0, RUN_END)],
    "write_queues": [("broker-a-0", "T", 4, 0, RUN_END)],
}
NODES = pd.DataFrame({"node": ["broker-a-0", "broker-a-1", "pg-1-0"], "role": ["broker", "broker", "producer"],
                      "broker": ["broker-a", "broker-a", None], "broker_id": pd.array([0, 1, None], dtype="Int64"),
                      "group": [None, None, "pg-1"], "auto_create": pd.array([None] * 3, dtype="boolean")})


def table(name: str, data: list[tuple[Any, ...]]) -> pd.DataFrame:
    """An interval table with the core's dtypes (float times, Int64 counts, object strings)."""
    cols = TABLES[name]
    df = pd.DataFrame(data, columns=cols).astype(object)
    return df.astype({"start": float, "end": float, **({"write_queues": "Int64"} if "write_queues" in cols else {})})


def send(msg_id: str, ts: float, broker: str | None = "broker-a", *, topic: str = "T", queue_id: int | None = 0,
         broker_id: int | None = None, producer: str = "pg-1-0") -> tuple[Any, ...]:
    return (msg_id, producer, ts, topic, broker, broker_id, queue_id, "ok")


def send_frame(sends: list[tuple[Any, ...]]) -> pd.DataFrame:
    df = pd.DataFrame(sends, columns=SENDS_COLUMNS).astype(object)
    return df.astype({"ts": float, "broker_id": "Int64", "queue_id": "Int64"})


def classified(sends: list[tuple[Any, ...]], run_end: float | None = RUN_END,
               **tables: list[tuple[Any, ...]]) -> pd.DataFrame:
    """``classify_sends`` of ``sends`` in :data:`WORLD`, ``tables`` replacing its tables of the
    same name."""
    given = {name: table(name, tables.get(name, WORLD[name])) for name in TABLES}
    return classify_sends(send_frame(sends), NODES, run_end=run_end, **given)


def classify(sends: list[tuple[Any, ...]], run_end: float | None = RUN_END,
             **tables: list[tuple[Any, ...]]) -> dict[str, tuple[Any, Any, Any]]:
    """``msg_id -> (target, target_id, reason)`` (see :func:`classified`)."""
    out = classified(sends, run_end, **tables)
    assert len(out) == len(sends)  # one row per send, whatever the lookups match
    return {m: (t, int(i), r)
            for m, t, i, r in zip(out["msg_id"], out["target"], out["target_id"], out["reason"], strict=True)}


def reasons(sends: list[tuple[Any, ...]], run_end: float | None = RUN_END,
            **tables: list[tuple[Any, ...]]) -> dict[str, Any]:
    """``msg_id -> reason``."""
    return {m: r for m, (_, _, r) in classify(sends, run_end, **tables).items()}


def test_a_well_routed_send_has_no_reason_and_only_three_columns_are_added():
    out = classified([send("ok", 100)])
    assert list(out.columns) == [*SENDS_COLUMNS, "target_id", "target", "reason"]
    assert classify([send("ok", 100)]) == {"ok": ("broker-a-0", 0, None)}


def test_a_send_without_a_broker_is_not_an_attempt_at_any_broker():
    got = classify([send("nr", 100, None, queue_id=None)], lives=[])  # nothing alive: still no reason
    assert got == {"nr": (None, 0, None)}


def test_dead_from_exactly_the_kill_until_the_restart():
    got = reasons([send("before", 499.999), send("at_kill", 500), send("down", 600), send("back", 800)],
                  lives=[("broker-a-0", 0, 500), ("broker-a-0", 800, RUN_END)])
    assert got == {"before": None, "at_kill": "dead", "down": "dead", "back": None}


def test_a_broker_missing_from_the_node_table_is_named_by_the_rule_and_dead():
    assert classify([send("z", 100, "broker-z")]) == {"z": ("broker-z-0", 0, "dead")}


def test_a_send_at_the_run_end_is_looked_up_just_before_it():
    assert classify([send("last", RUN_END)]) == {"last": ("broker-a-0", 0, None)}
    assert classify([send("last", RUN_END)], run_end=None) == {"last": ("broker-a-0", 0, "dead")}


def test_paused_within_the_pause_only():
    got = reasons([send("before", 199.5), send("start", 200), send("end", 300)],
                  pauses=[("broker-a-0", 200, 300)])
    assert got == {"before": None, "start": "paused", "end": None}


def test_partitioned_on_the_cut_link_either_way_round():
    # links are stored as the pair (a <= b): "a-prod" sorts before the broker, "pg-1-0" after it
    got = reasons([send("pg", 450), send("other", 450, producer="pg-2-0"),
                   send("a", 450, producer="a-prod"), send("after", 500)],
                  partitions=[("broker-a-0", "pg-1-0", 400, 500), ("a-prod", "broker-a-0", 400, 500)])
    assert got == {"pg": "partitioned", "other": None, "a": "partitioned", "after": None}


def test_a_send_to_a_slave_is_not_master():
    assert classify([send("slave", 100, broker_id=1)]) == {"slave": ("broker-a-1", 1, "not_master")}


def test_no_topic_on_a_master_that_neither_hosts_nor_auto_creates_it():
    assert classify([send("nt", 100, topic="U")]) == {"nt": ("broker-a-0", 0, "no_topic")}


def test_bad_queue_at_or_past_the_write_queue_count_of_the_latest_line():
    got = reasons([send("q3", 100, queue_id=3), send("q4", 100, queue_id=4), send("q4_later", 600, queue_id=4)],
                  write_queues=[("broker-a-0", "T", 4, 0, 500), ("broker-a-0", "T", 8, 500, RUN_END)])
    assert got == {"q3": None, "q4": "bad_queue", "q4_later": None}


def test_tbw102_lends_its_write_queue_count_only_under_auto_create():
    sends = [send("q7", 100, topic="U", queue_id=7), send("q8", 100, topic="U", queue_id=8)]
    auto = [("broker-a-0", 0, RUN_END)]
    tbw = [*WORLD["write_queues"], ("broker-a-0", "TBW102", 8, 0, RUN_END)]
    assert reasons(sends, autocreate=auto, write_queues=tbw) == {"q7": None, "q8": "bad_queue"}
    assert reasons(sends, autocreate=auto) == {"q7": None, "q8": None}  # no TBW102 line: the count is unknown
    # a TBW102 line lends its count only to a node that auto-creates (here T has no line at all)
    got = reasons([send("t8", 100, queue_id=8)], write_queues=[("broker-a-0", "TBW102", 8, 0, RUN_END)])
    assert got == {"t8": None}


def test_the_first_matching_reason_wins():
    """dead > paused > partitioned > not_master > no_topic > bad_queue: the slave is down
    until 200, paused until 300, cut off until 400; every send is also to a slave, of a
    topic it does not host, on a queue that does not exist."""
    wrong = dict(topic="U", queue_id=99, broker_id=1)
    got = reasons([send("t100", 100, **wrong), send("t250", 250, **wrong), send("t350", 350, **wrong),
                   send("t450", 450, **wrong), send("master_u", 450, topic="U", queue_id=99),
                   send("master_t", 450, queue_id=99)],
                  lives=[("broker-a-0", 0, RUN_END), ("broker-a-1", 200, RUN_END)],
                  pauses=[("broker-a-1", 0, 300)], partitions=[("broker-a-1", "pg-1-0", 0, 400)])
    assert got == {
        "t100": "dead", "t250": "paused", "t350": "partitioned", "t450": "not_master",
        "master_u": "no_topic", "master_t": "bad_queue"}


def test_misrouted_counts_by_reason_and_over_time():
    classified = pd.DataFrame({"ts": [100, 150, 260, 270, 299.9],
                               "reason": [None, "dead", "dead", "dead", "paused"],
                               "outcome": ["ok", "timeout", "timeout", "error", "timeout"]})
    got = misrouted_by_reason(classified)
    assert list(got.columns) == ["reason", "outcome", "sends"]
    assert list(got.itertuples(index=False, name=None)) == [
        ("dead", "error", 1), ("dead", "timeout", 2), ("paused", "timeout", 1)]
    # bins of 100 ms from the run start 60: 150 is in bin 0 [60, 160), 260 opens bin 2 [260, 360)
    got = misrouted_over_time(classified, run_start=60.0, bin_ms=100.0)
    assert list(got.columns) == ["bin", "reason", "sends"]
    assert list(got.itertuples(index=False, name=None)) == [(0, "dead", 1), (2, "dead", 2), (2, "paused", 1)]


# --- beyond the Spark cases -------------------------------------------------------------------

def test_rows_keep_their_order_and_columns_with_every_send_column():
    sends = [send(f"m{i}", float(ts)) for i, ts in enumerate([700, 100, 500, 100, 999])]
    out = classified(sends, lives=[("broker-a-0", 0, 500)])
    assert list(out["msg_id"]) == ["m0", "m1", "m2", "m3", "m4"]
    assert list(out["reason"]) == ["dead", None, "dead", None, "dead"]
    assert out["target_id"].dtype == "Int64"


def test_empty_sends_and_empty_tables():
    out = classified([])
    assert list(out.columns) == [*SENDS_COLUMNS, "target_id", "target", "reason"] and out.empty
    assert list(misrouted_by_reason(out).columns) == ["reason", "outcome", "sends"]
    assert misrouted_over_time(out, 0.0, 10.0).empty
    empty = {name: [] for name in TABLES}
    assert reasons([send("x", 100)], **empty) == {"x": "dead"}


def test_a_null_topic_or_queue_matches_no_line():
    # topic None: no hosting line matches -> no_topic; queue None never bad_queue
    assert reasons([send("nt", 100, topic=None)]) == {"nt": "no_topic"}
    assert reasons([send("nq", 100, queue_id=None)]) == {"nq": None}


def test_a_null_write_queue_count_falls_back_to_tbw102_under_auto_create():
    wq = [("broker-a-0", "T", None, 0, RUN_END), ("broker-a-0", "TBW102", 2, 0, RUN_END)]
    assert reasons([send("q2", 100, queue_id=2)], write_queues=wq) == {"q2": None}
    got = reasons([send("q2", 100, queue_id=2)], write_queues=wq, autocreate=[("broker-a-0", 0, RUN_END)])
    assert got == {"q2": "bad_queue"}


def test_point_lookup_half_open_and_per_key():
    iv = pd.DataFrame({"node": ["x", "x", "y"], "start": [0.0, 10.0, 5.0], "end": [5.0, 20.0, 6.0],
                       "v": pd.array([1, 2, None], dtype="Int64")})
    at = np.array([0.0, 4.999, 5.0, 10.0, 19.99, 20.0, 5.0, 5.5, 1.0])
    keys = np.array(["x", "x", "x", "x", "x", "x", "y", "y", None], dtype=object)
    found, vals = point_lookup(at, [keys], iv, ["node"], "v")
    assert found.tolist() == [True, True, False, True, True, False, True, True, False]
    assert np.array_equal(vals, [1, 1, np.nan, 2, 2, np.nan, np.nan, np.nan, np.nan], equal_nan=True)
