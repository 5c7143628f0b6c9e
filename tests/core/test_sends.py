"""Send attempts and their client-side metrics (``reports.core.sends``): the ``sends`` table of
the events, outcome counts with distinct messages, exact latency percentiles, "No route info"
errors per topic and the per-bin latency of the plot. Every number worked out by hand."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rmqemu.reports.core.frame import events
from rmqemu.reports.core.schema import NO_ROUTE_ERRORS
from rmqemu.reports.core.sends import (
    OUTCOME_COLUMNS,
    SEND_COLUMNS,
    latency_over_time,
    latency_percentiles,
    no_route_errors,
    send_outcomes,
    sends,
)

NO_ROUTE_ERROR, SELECT_NO_ROUTE_ERROR = NO_ROUTE_ERRORS
NO_ROUTE = f"{NO_ROUTE_ERROR}, Ghost"


def send(ts: float, msg_id: str | None, outcome: str | None = "ok", latency_ms: float | None = 1.0,
         topic: str = "T", node: str = "pg-1-0", **fields: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "send", "msg_id": msg_id, "topic": topic, "broker": "broker-a",
            "queue_id": 0, "attempt": 1, "outcome": outcome, "code": 0, "latency_ms": latency_ms, "group": "pg-1",
            **fields}


def test_sends_are_the_send_lines_with_the_node_as_producer():
    ev = events([{"ts": 1.0, "node": "broker-a-0", "kind": "node.start"}, send(2.0, "m1", broker_id=1),
                 {"ts": 3.0, "node": "pg-1-0", "kind": "consume", "topic": "T"}, send(4.0, "m2", node="pg-2-0")])
    s = sends(ev)
    assert list(s.columns) == list(SEND_COLUMNS)
    assert list(s.itertuples(index=False, name=None))[0][:6] == ("pg-1-0", 2.0, 1, "m1", "T", "broker-a")
    assert list(s["producer"]) == ["pg-1-0", "pg-2-0"] and list(s["seq"]) == [1, 3]
    assert s["broker_id"].dtype == "Int64" and s["broker_id"].isna().tolist() == [False, True]
    assert sends(events([{"ts": 1.0, "node": "n", "kind": "node.start"}])).empty


def outcomes(records: list[dict[str, Any]]) -> dict[str, int]:
    out = send_outcomes(sends(events(records)))
    assert list(out.columns) == list(OUTCOME_COLUMNS) and len(out) == 1
    return {k: int(v) for k, v in out.iloc[0].items()}


def test_outcomes_count_attempts_and_distinct_messages():
    """m1: timeout then ok (acked); m2: error, error (not acked); m3: no_route; m4: oneway
    (other); m1 again ok (still one message); an attempt without a msg_id counts as an
    attempt but is no message; a null outcome is ``other``."""
    got = outcomes([send(1, "m1", "timeout"), send(2, "m1", "ok"), send(3, "m2", "error"), send(4, "m2", "error"),
                    send(5, "m3", "no_route"), send(6, "m4", "oneway"), send(7, "m1", "ok"), send(8, None, "ok"),
                    send(9, "m5", None)])
    assert got == {"attempts": 9, "ok": 3, "failed": 3, "no_route": 1, "timeout": 1, "error": 2, "other": 2,
                   "messages": 5, "acked": 1}


def test_acked_counts_a_message_once_and_no_sends_give_no_row():
    assert outcomes([send(1, "m", "ok"), send(2, "m", "ok")])["acked"] == 1
    out = send_outcomes(sends(events([{"ts": 1.0, "node": "n", "kind": "node.start"}])))
    assert out.empty and list(out.columns) == list(OUTCOME_COLUMNS)


def test_latency_percentiles_are_exact_with_linear_interpolation():
    """all: 1, 2, 3, 4, 10 (the no_route attempt has no latency): p50 3, p90 at rank 3.6
    = 4 + 0.6 * 6 = 7.6, p99 at rank 3.96 = 4 + 0.96 * 6 = 9.76, mean 4; ok: 1, 3, 10:
    p50 3, p90 at rank 1.8 = 3 + 0.8 * 7 = 8.6, p99 at 1.98 = 3 + 0.98 * 7 = 9.86."""
    s = sends(events([send(1, "a", "ok", 1.0), send(2, "b", "timeout", 2.0), send(3, "c", "ok", 3.0),
                      send(4, "d", "error", 4.0), send(5, "e", "ok", 10.0), send(6, "f", "no_route", None)]))
    got = latency_percentiles(s)
    assert list(got.columns) == ["scope", "n", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms"]
    rows = {r[0]: r[1:] for r in got.itertuples(index=False, name=None)}
    assert rows["all"] == pytest.approx((5, 3.0, 7.6, 9.76, 10.0, 4.0))
    assert rows["ok"] == pytest.approx((3, 3.0, 8.6, 9.86, 10.0, 14.0 / 3))
    assert list(got["scope"]) == ["all", "ok"]


def test_latency_percentiles_without_ok_or_without_latency():
    s = sends(events([send(1, "a", "timeout", 5.0), send(2, "b", "timeout", 7.0)]))
    got = latency_percentiles(s)
    assert list(got.itertuples(index=False, name=None)) == [("all", 2, 6.0, 6.8, 6.98, 7.0, 6.0)]
    assert latency_percentiles(sends(events([send(1, "a", "no_route", None)]))).empty


def test_latency_over_time_bins_and_inverted_cdf_percentiles():
    """Bins of 100 from 0: bin 0 = 10, 20, 30, 40 (p50: the 2nd smallest, 20; p99: the 4th,
    40); bin 1 (ts 100, at the bin's start) = 5 alone, a timeout; bin 3 = 1..100 (p50 50, p99
    99, the ceil(q * n)-th smallest); the attempt without latency is left out."""
    recs = [send(t, f"a{t}", "ok", v) for t, v in ((0, 40.0), (10, 10.0), (20, 30.0), (99.9, 20.0))]
    recs += [send(100, "b", "timeout", 5.0), send(150, "c", "no_route", None)]
    recs += [send(300 + i / 10, f"d{i}", "ok", float(i)) for i in range(100, 0, -1)]
    got = latency_over_time(sends(events(recs)), run_start=0.0, bin_ms=100.0)
    assert list(got.columns) == ["bin", "n", "p50_ms", "p99_ms", "max_ms", "timeouts"]
    assert list(got.itertuples(index=False, name=None)) == [
        (0, 4, 20.0, 40.0, 40.0, 0), (1, 1, 5.0, 5.0, 5.0, 1), (3, 100, 50.0, 99.0, 100.0, 0)]
    lat = np.arange(1.0, 101.0)
    assert np.quantile(lat, [0.5, 0.99], method="inverted_cdf").tolist() == [50.0, 99.0]


def test_latency_over_time_before_the_start_and_empty():
    got = latency_over_time(sends(events([send(-1, "a", "ok", 3.0)])), run_start=0.0, bin_ms=100.0)
    assert got["bin"].tolist() == [-1]  # floor, not truncation
    empty = latency_over_time(sends(events([send(1, "a", "no_route", None)])), 0.0, 100.0)
    assert empty.empty and list(empty.columns) == ["bin", "n", "p50_ms", "p99_ms", "max_ms", "timeouts"]


def test_no_route_errors_per_topic():
    """sendDefaultImpl's text and an ordered send's (sendSelectImpl: "for this topic, T") both count."""
    recs = [send(1, "g1", "no_route", None, topic="Ghost", error=NO_ROUTE),
            send(2, "g1", "no_route", None, topic="Ghost", error=NO_ROUTE),
            send(3, "h", "no_route", None, topic="Other", error=f"x {NO_ROUTE_ERROR} y"),
            send(4, "e", "error", 2.0, error="timeout"), send(5, "o", "ok"),
            send(6, "s", "no_route", None, topic="Ghost", error=f"{SELECT_NO_ROUTE_ERROR}, Ghost",
                 sharding_key="pg-0:1")]
    got = no_route_errors(sends(events(recs)))
    assert list(got.columns) == ["topic", "errors"]
    assert list(got.itertuples(index=False, name=None)) == [("Ghost", 3), ("Other", 1)]
    assert no_route_errors(sends(events([send(1, "o", "ok")]))).empty
