"""Verdict rules (rmqemu.verdicts, docs/design.md §9), on hand-made metrics documents."""

from __future__ import annotations

import pytest

from rmqemu.errors import ExpectationError
from rmqemu.verdicts import judge, parse_expect, passed

METRICS = {
    "consumption": {"lost": 0, "by_topic": [{"topic": "T", "lost": 0}]},
    "misrouted": {"total": 53},
    "timing": {"healthy": True, "lag_p99_ms": 2.25},
    "sends": {"latency": {"ok": {"p99_ms": 12.5}}},
}


def test_equality_bounds_and_booleans_each_say_how_they_missed() -> None:
    rules = parse_expect({"consumption.lost": 0, "misrouted.total": {"max": 50}, "timing.healthy": False,
                          "timing.lag_p99_ms": {"min": 1, "max": 5}, "sends.latency.ok.p99_ms": {"min": 20}})
    verdicts = judge(rules, METRICS)
    assert [v.passed for v in verdicts] == [True, False, False, True, False]
    assert [v.line() for v in verdicts if not v.passed] == [
        "FAIL misrouted.total = 53, expected <= 50 (3 over the max of 50)",
        "FAIL timing.healthy = true, expected = false",
        "FAIL sends.latency.ok.p99_ms = 12.5, expected >= 20 (7.5 under the min of 20)",
    ]
    assert verdicts[0].line() == "PASS consumption.lost = 0, expected = 0"
    assert not passed(verdicts) and passed(verdicts[:1])


def test_a_number_never_equals_a_boolean() -> None:
    [v] = judge(parse_expect({"timing.healthy": 1}), METRICS)
    assert not v.passed  # true is not 1 in a verdict, although Python says True == 1


@pytest.mark.parametrize("raw, message", [
    ({"consumption.lost": "0"}, "consumption.lost: expected a number"),
    ({"misrouted.total": {"most": 5}}, "misrouted.total: expected a number"),
    ({"misrouted.total": {"min": 5, "max": 1}}, "min 5 is above max 1"),
    ({"a..b": 1}, "a metric path is dotted names"),
    ([1, 2], "expected a mapping"),
])
def test_malformed_rules_are_bad_input(raw: object, message: str) -> None:
    with pytest.raises(ExpectationError, match=message):
        parse_expect(raw, "expect")


def test_paths_must_name_a_value_the_metrics_have() -> None:
    with pytest.raises(ExpectationError) as err:
        judge(parse_expect({"consumption.lots": 0, "consumption.by_topic": 0, "timing": True}), METRICS)
    assert str(err.value).splitlines() == [
        "expect.consumption.lots: metrics.json has no such path (a run's report/metrics.json shows them)",
        "expect.consumption.by_topic: is a table, not a value; name one of its fields",
        "expect.timing: is a group, not a value; name one of its fields",
    ]


def test_a_count_under_a_key_the_run_did_not_produce_is_zero_not_bad_input() -> None:
    """``by_reason_outcome`` lists only the reasons and outcomes that occurred: a rule on a timeout
    that never happened holds (0), a rule that needs one fails with 0, not exit 2."""
    metrics = {**METRICS, "misrouted": {"total": 53, "by_reason_outcome": {"dead": {"ok": 3}}}}
    verdicts = judge(parse_expect({"misrouted.by_reason_outcome.dead.timeout": {"max": 0},
                                   "misrouted.by_reason_outcome.paused.ok": {"min": 1},
                                   "misrouted.by_reason_outcome.dead.ok": 3}), metrics)
    assert [(v.value, v.passed) for v in verdicts] == [(0, True), (0, False), (3, True)]
    with pytest.raises(ExpectationError):  # a fixed path the document lacks is still bad input
        judge(parse_expect({"misrouted.by_reason.dead": 0}), metrics)
