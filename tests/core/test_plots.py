"""The plot tables (reports.core.plots) of a tiny hand-made analysis: the stalest topics and
lanes, state runs, time bins, caps, availability spans; no JVM."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from rmqemu.reports.core import sends as sends_mod
from rmqemu.reports.core.availability import unavailable_windows
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.core.plots import compress_states, plot_tables

INFO = RunInfo(run_start=0.0, run_end=12000.0)  # bins of 100 ms
SEND_COLUMNS = list(sends_mod.SEND_COLUMNS)
NAMES = ["p.latency", "p.faults", "p.misrouted", "p.topics", "p.lanes", "p.lane_counts", "p.durations",
         "p.intervals", "p.producers", "p.unavailable"]


def frame(columns: list[str], rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def send(producer: str, ts: float, topic: str, outcome: str, latency: float | None, reason: str | None = None
         ) -> dict[str, Any]:
    return {"producer": producer, "ts": ts, "seq": int(ts), "msg_id": f"m{ts}", "topic": topic, "broker": "broker-a",
            "broker_id": None, "queue_id": 0, "attempt": 1, "outcome": outcome, "code": 0, "latency_ms": latency,
            "error": None, "group": "pg", "sharding_key": None, "route_queues": None, "broker_addr": None,
            "transaction": None, "proxy": None,
            "target_id": 0, "target": "broker-a-0", "reason": reason}


def pieces(who: str, rows: list[tuple[str, str, float, float, bool, bool]]) -> pd.DataFrame:
    df = frame([who, "topic", "start", "end", "over", "under"], rows)
    df["view"], df["brokers"] = [()] * len(df), [()] * len(df)
    df["stale"] = df["over"] | df["under"]
    return df[[who, "topic", "start", "end", "view", "brokers", "over", "under", "stale"]]


def staleness(rows: list[tuple[str, str, float | None]]) -> pd.DataFrame:
    df = frame(["client", "topic", "stale_ms"], rows)
    for c in ("measured_ms", "stale_over_ms", "stale_under_ms", "max_ms"):
        df[c] = 0.0
    df["intervals"] = 0
    return df[["client", "topic", "measured_ms", "stale_ms", "stale_over_ms", "stale_under_ms", "intervals", "max_ms"]]


def tables(info: RunInfo = INFO) -> dict[str, pd.DataFrame]:
    classified = pd.DataFrame([
        send("p1", 50, "T", "ok", 1.0), send("p1", 60, "T", "timeout", 3.0, "paused"), send("p1", 250, "T", "ok", 2.0),
        send("p1", 300, "U", "oneway", None), send("p2", 400, "U", "error", None, "dead")])
    return {
        "sends": classified[SEND_COLUMNS], "classified": classified,
        "windows": unavailable_windows(classified[SEND_COLUMNS], info.measure_end),
        "faults": pd.DataFrame({"fault_id": ["f1", "f2"], "fault": ["pause", "kill"],
                                "targets": [("broker-a-0",), None],
                                "params": [None, None], "start": [1000.0, 5000.0], "end": [3000.0, 12000.0],
                                "has_end": [True, False], "next_start": [5000.0, 12000.0]}),
        "truth": frame(["topic", "brokers", "start", "end"], [
            ("T", ("broker-a", "broker-b"), 0.0, 1000.0), ("T", ("broker-b",), 1000.0, 12000.0),
            ("U", ("broker-a",), 0.0, 12000.0), ("V", (), 0.0, 12000.0)]),
        "client_staleness": staleness([("c1", "T", 500.0), ("c2", "T", 800.0), ("c1", "U", 100.0), ("c1", "V", 100.0)]),
        "client_pieces": pieces("client", [
            ("c1", "T", 500.0, 1000.0, True, False), ("c1", "T", 0.0, 500.0, True, False),  # one "over" run
            ("c1", "T", 1000.0, 1500.0, False, False), ("c1", "T", 1600.0, 2000.0, False, False),  # a gap: two
            ("c2", "T", 0.0, 400.0, False, True), ("c2", "T", 400.0, 800.0, True, True),
            ("c1", "U", 0.0, 100.0, False, True), ("c1", "V", 0.0, 100.0, False, True)]),
        "namesrv_pieces": pieces("namesrv", [("ns-0", "T", 0.0, 1000.0, False, False),
                                             ("ns-0", "T", 1000.0, 2000.0, False, False)]),
        "client_intervals": frame(["client", "topic", "start", "end", "duration_ms"], [
            ("c2", "T", 0.0, 800.0, 800.0), ("c1", "T", 0.0, 1000.0, 1000.0), ("c1", "V", 0.0, 100.0, 100.0),
            ("c1", "U", 0.0, 100.0, 100.0)]),
    }


def rows(df: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(None if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in r)
            for r in df.itertuples(index=False)]


@pytest.fixture(scope="module")
def capped() -> dict[str, pd.DataFrame]:
    return plot_tables(tables(), INFO, max_topics=2, max_lanes=1, max_durations=2, max_windows=1)


def test_the_stalest_topics_and_lanes_ties_by_name(capped) -> None:
    assert rows(capped["p.topics"]) == [("T", 1300.0), ("U", 100.0), ("V", 100.0)]
    assert rows(capped["p.lane_counts"]) == [("T", 2), ("U", 1)]  # V is not among the 2 stalest (U wins the tie)
    assert list(capped["p.lanes"].columns) == ["topic", "lane", "kind", "state", "label", "start_s", "end_s"]
    assert rows(capped["p.lanes"]) == [
        ("T", "truth", "truth", "truth", "broker-a, broker-b", 0.0, 1.0),
        ("T", "truth", "truth", "truth", "broker-b", 1.0, 12.0),
        ("U", "truth", "truth", "truth", "broker-a", 0.0, 12.0),
        ("T", "ns-0", "namesrv", "fresh", "", 0.0, 2.0),          # two fresh pieces, one run
        ("T", "c2", "client", "under", "", 0.0, 0.4),              # c2 is T's stalest client: max_lanes 1
        ("T", "c2", "client", "both", "", 0.4, 0.8),
        ("U", "c1", "client", "under", "", 0.0, 0.1)]


def test_every_lane_without_caps() -> None:
    lanes = plot_tables(tables(), INFO)["p.lanes"]
    c1 = lanes[(lanes["lane"] == "c1") & (lanes["topic"] == "T")]
    assert rows(c1[["state", "start_s", "end_s"]]) == [("over", 0.0, 1.0), ("fresh", 1.0, 1.5), ("fresh", 1.6, 2.0)]
    assert set(lanes["topic"]) == {"T", "U", "V"}


def test_time_bins_faults_and_caps(capped) -> None:
    assert list(capped["p.latency"].columns) == ["t_s", "n", "p50_ms", "p99_ms", "max_ms", "timeouts"]
    assert rows(capped["p.latency"]) == [(0.05, 2, 1.0, 3.0, 3.0, 1), (0.25, 1, 2.0, 2.0, 2.0, 0)]
    assert rows(capped["p.misrouted"]) == [(0.05, "paused", 1), (0.45, "dead", 1)]
    assert rows(capped["p.faults"]) == [("f1", "pause", "broker-a-0", 1.0, 3.0, True),
                                        ("f2", "kill", "", 5.0, 12.0, False)]
    assert rows(capped["p.durations"]) == [(1000.0,), (100.0,), (100.0,)]  # first 2 + 1 by client, topic, start
    assert rows(capped["p.intervals"]) == [(4,)]


def test_availability_spans_and_windows(capped) -> None:
    assert rows(capped["p.producers"]) == [("p1", 0.05, 0.25, 3), ("p2", 0.4, 0.4, 1)]  # the oneway is not measured
    assert rows(capped["p.unavailable"]) == [("p1", "T", 0.06, 0.25), ("p2", "U", 0.4, 12.0)]  # max_windows 1: 2 rows
    stop = RunInfo(0.0, 12000.0, stop_ms=350.0)
    stopped = plot_tables(tables(stop), stop)
    assert rows(stopped["p.producers"]) == [("p1", 0.05, 0.25, 3)]
    assert rows(stopped["p.unavailable"]) == [("p1", "T", 0.06, 0.25)]


def test_compress_states_merges_adjacent_equal_states_only() -> None:
    got = compress_states(tables()["client_pieces"], "client")
    assert list(got.columns) == ["client", "topic", "state", "start", "end"]
    assert len(got) == 7 and rows(got[got["client"] == "c2"]) == [("c2", "T", "under", 0.0, 400.0),
                                                                    ("c2", "T", "both", 400.0, 800.0)]


def test_an_empty_analysis_gives_empty_tables() -> None:
    empty = {name: df.iloc[:0] for name, df in tables().items()}
    got = plot_tables(empty, INFO)
    assert list(got) == NAMES
    assert all(df.empty for df in got.values())
    assert list(got["p.lanes"].columns)[-1] == "end_s" and list(got["p.intervals"].columns) == ["n"]
    assert list(got["p.producers"].columns) == ["producer", "first_s", "last_s", "attempts"]
