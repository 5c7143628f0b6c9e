"""The one-line summary names the seed phenomena a run showed, and only those."""
from __future__ import annotations

from rmqemu.reports.summary import one_line

QUIET = {"staleness": {"clients_total": {"stale_ms": 1234.4, "intervals": 3}},
         "misrouted": {"total": 2}, "consumption": {"lost": 0}}


def test_a_quiet_run_gives_the_three_headlines_only() -> None:
    assert one_line(QUIET) == "clients stale 1,234 wall ms in 3 interval(s); 2 misrouted send(s); 0 lost message(s)"


def test_each_phenomenon_is_named_when_it_occurred() -> None:
    m = {**QUIET,
         "sends": {"no_route_errors": {"total": 62}},
         "subscriptions": {"subscription_not_exist": {"total": 136}, "non_subscriber_queues": {"total": 0}},
         "autocreate": [{"topic": "T", "auto_masters": ["broker-a", "broker-b"], "of_auto_masters": 1},
                        {"topic": "U", "auto_masters": ["broker-a", "broker-b"], "of_auto_masters": 2}]}
    assert one_line(m).split("; ")[3:] == [
        '62 "No route info of/for this topic" error(s)', "136 SUBSCRIPTION_NOT_EXIST pull(s)",
        "1 auto-created topic(s) missing on some auto-create master"]
