"""The ``transactions`` section of metrics.json (docs/design.md §7 "Transactions"): the paths
:mod:`reports.metrics_transactions` writes, registered by :mod:`rmqemu.metric_paths` after the
failover section."""

from __future__ import annotations

from rmqemu.metric_units import COUNT, GROUP, MS, NUMBER, TABLE, TEXT, Metric

SECTION = "Transactions"

#: Why a committed message was stored twice (the report's ``reports.core.transactions.CAUSES``; a
#: test keeps the two equal).
CAUSES: tuple[str, ...] = ("first_hand_and_check", "checks_only", "first_hand_only")
_CAUSE_TEXT = {
    "first_hand_and_check": "... by the producer's own end and a check's answer (an end that came late, or was lost "
                            "on its way, or a check of a copy made before it)",
    "checks_only": "... by two checks' answers (a re-checked copy; or a half stored on two brokers, each checking it)",
    "first_hand_only": "... by two of the producer's own ends (a duplicated END_TRANSACTION)",
}
#: A tx.discard's reasons (the report's ``DISCARD_REASONS``).
DISCARD_REASONS: tuple[str, ...] = ("max_checks", "expired")
_FAULT_COUNTS = (
    ("messages", "transactional messages whose life (first tx line to last ok end or discard, or the run's end while "
                 "open) overlaps its window"),
    ("committed", "... of them committed"), ("rolled_back", "... rolled back"),
    ("after_check", "... decided by a check's answer"), ("discarded", "... discarded"), ("open", "... still open"),
    ("stored_twice", "... committed twice"), ("rolled_back_delivered", "... rolled back and delivered"),
    ("checks", "checks sent (tx.check) in its window"), ("checks_no_channel", "... of them to no producer channel"),
)


def transaction_metrics() -> list[Metric]:
    """The paths of the ``transactions`` section, in document order."""
    out: list[Metric] = []

    def add(path: str, unit: str, what: str) -> None:
        out.append(Metric(path, unit, what, SECTION))

    x = "transactions"
    add(x, GROUP, "transactional messages from half to end, joined by msg_id (docs/design.md §7 \"Transactions\"); a "
                  "message's fate, first match wins: committed, rolled back, discarded, open; all 0 in a run "
                  "without one")
    add(f"{x}.halves", GROUP, "half messages")
    add(f"{x}.halves.sent", COUNT, "messages a producer's half send was ok for (send with transaction half)")
    add(f"{x}.halves.stored", COUNT, "messages a master stored a half of (tx.half)")
    add(f"{x}.halves.stored_again", COUNT, "... more than once (a half send retried after an attempt that was stored)")
    add(f"{x}.committed", GROUP, "messages a tx.end committed (result ok): visible in their topic")
    add(f"{x}.committed.total", COUNT, "committed messages")
    add(f"{x}.committed.first_hand", COUNT, "... whose first commit was the producer's own end")
    add(f"{x}.committed.after_check", COUNT, "... whose first commit answered a check")
    add(f"{x}.committed.consumed", COUNT, "... that some consumer group consumed")
    add(f"{x}.committed.lost_per_group", COUNT, "committed messages a subscribing group never had while it still had "
                                                "consumers, summed over (group, topic): `transactions.groups`")
    add(f"{x}.committed.gone_per_group", COUNT, "... never consumed because the group's consumers had left")
    add(f"{x}.rolled_back", GROUP, "messages a tx.end rolled back (result ok) and none committed")
    add(f"{x}.rolled_back.total", COUNT, "rolled-back messages")
    add(f"{x}.rolled_back.first_hand", COUNT, "... by the producer's own end")
    add(f"{x}.rolled_back.after_check", COUNT, "... by a check's answer")
    add(f"{x}.rolled_back.delivered", COUNT, "... that a consumer group consumed all the same: a violation, must be 0")
    add(f"{x}.discarded", GROUP, "messages neither committed nor rolled back that a master gave up (tx.discard)")
    add(f"{x}.discarded.total", COUNT, "discarded messages")
    for reason, text in zip(DISCARD_REASONS, ("... after transactionCheckMax checks",
                                              "... older than fileReservedTime"), strict=True):
        add(f"{x}.discarded.{reason}", COUNT, text)
    add(f"{x}.discarded.delivered", COUNT, "... that a consumer group consumed all the same: a violation, must be 0")
    add(f"{x}.open", GROUP, "messages stored and neither ended nor discarded by the end of the run")
    add(f"{x}.open.total", COUNT, "open messages")
    add(f"{x}.open.delivered", COUNT, "... that a consumer group consumed all the same: a violation, must be 0")
    add(f"{x}.by_checks[]", TABLE, "one row per number of checks a message decided by a check's answer took: the "
                                   "check_times of the check its deciding end answered, else its tx.check lines")
    for col, unit, text in (("checks", NUMBER, "the checks"), ("committed", COUNT, "messages committed after them"),
                            ("rolled_back", COUNT, "messages rolled back after them")):
        add(f"{x}.by_checks[].{col}", unit, text)
    add(f"{x}.visible", GROUP, "from a committed message's tx.half (on the broker of its first commit) to that commit")
    add(f"{x}.visible.n", COUNT, "committed messages measured")
    for q in ("p50", "p90", "p99", "max", "mean"):
        add(f"{x}.visible.{q}_ms", MS, f"{q} of that time (null without one)")
    add(f"{x}.duplicates", GROUP, "committed messages stored twice: two or more ok commits of one msg_id (4.9.4's "
                                  "commit is not idempotent)")
    add(f"{x}.duplicates.stored_twice", COUNT, "committed messages with two or more ok commits")
    add(f"{x}.duplicates.delivered_twice", COUNT, "... that a consumer group consumed more than once from their "
                                                  "topic (deliveries a real orderly client dropped not counted)")
    add(f"{x}.duplicates.by_cause", GROUP, "... by what made the commits")
    for cause in CAUSES:
        add(f"{x}.duplicates.by_cause.{cause}", COUNT, _CAUSE_TEXT[cause])
    add(f"{x}.checks", GROUP, "CHECK_TRANSACTION_STATE requests (tx.check)")
    add(f"{x}.checks.sent", COUNT, "checks sent, to a producer channel or to none")
    add(f"{x}.checks.no_channel", COUNT, "... with no producer channel of the group (client_id null)")
    add(f"{x}.checks.messages", COUNT, "messages checked at least once")
    add(f"{x}.groups[]", TABLE, "one row per (consumer group, topic) it subscribes that has committed messages")
    for col, unit, text in (
            ("group", TEXT, "the consumer group"), ("topic", TEXT, "the topic"),
            ("committed", COUNT, "the topic's messages first committed before run.stop"),
            ("consumed", COUNT, "... of them the group consumed (under any topic, a retry by the id first acked)"),
            ("dead_lettered", COUNT, "... of the rest the group gave up on (%DLQ%, dropped)"),
            ("retrying", COUNT, "... of the rest the group failed and was still retrying"),
            ("delayed", COUNT, "... of the rest not delivered to the topic by run.stop"),
            ("gone", COUNT, "... of the rest, when the group's consumers had all left by run.stop"),
            ("lost", COUNT, "... of the rest, when the group still had consumers at run.stop")):
        add(f"{x}.groups[].{col}", unit, text)
    add(f"{x}.faults[]", TABLE, "one row per fault, in start order")
    for col, unit, text in (("fault_id", TEXT, "the fault"), ("fault", TEXT, "its kind"),
                            ("start_offset_ms", MS, "its start, from the run's first event"),
                            ("impact_end_offset_ms", MS, "the end of its attribution window (docs/design.md §9)"),
                            *((c, COUNT, t) for c, t in _FAULT_COUNTS)):
        add(f"{x}.faults[].{col}", unit, text)
    return out
