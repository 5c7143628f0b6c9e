"""The ``failover`` section of metrics.json (docs/design.md §7 "DLedger failovers"): the paths
:mod:`reports.metrics_failover` writes, registered by :mod:`rmqemu.metric_paths` after the order
section."""

from __future__ import annotations

from rmqemu.metric_units import COUNT, GROUP, MS, NUMBER, TABLE, TEXT, Metric

SECTION = "DLedger failovers"

#: What a send to an old master got, first match wins (the report's
#: ``reports.core.failover_sends.GOT``; a test keeps the two equal).
GOT: tuple[str, ...] = ("ok", "timeout", "refused", "not_available", "system_error", "other")
_GOT_TEXT = {
    "ok": "... answered ok (the old master still took it)",
    "timeout": "... without an answer in time",
    "refused": "... whose connection was refused (CONNECT_BROKER_EXCEPTION, 10001: the node is down)",
    "not_available": "... answered SERVICE_NOT_AVAILABLE (14: a demoted master)",
    "system_error": "... answered SYSTEM_ERROR (1: a peer not leading, or a quorum ack that timed out)",
    "other": "... anything else",
}
_FAILOVER = "failover: a leadership of a group after its first (a change of leader), identified by (group, term)"
_KEY = (("group", TEXT, "the DLedger group (its broker name)"), ("term", NUMBER, "the failover's new term"))


def failover_metrics() -> list[Metric]:
    """The paths of the ``failover`` section, in document order."""
    out: list[Metric] = []

    def add(path: str, unit: str, what: str) -> None:
        out.append(Metric(path, unit, what, SECTION))

    def table(path: str, what: str, cols: tuple[tuple[str, str, str], ...]) -> None:
        add(f"{path}[]", TABLE, what)
        for col, unit, text in cols:
            add(f"{path}[].{col}", unit, text)

    f = "failover"
    add(f, GROUP, "DLedger broker groups electing their master, and what each failover cost "
                  "(docs/design.md §7 \"DLedger failovers\"); all 0 in a run without one")
    add(f"{f}.elections", COUNT, "leaderships: dledger.role LEADER lines, first elections included")
    add(f"{f}.failovers", COUNT, "failovers: leaderships of a group after its first")
    add(f"{f}.max_election_ms", MS, "the longest from an old leader's stop to the next election")
    add(f"{f}.max_no_master_ms", MS, "the longest from an old leader's stop to the new leader's broker taking "
                                     "brokerId 0 (to the failover's end without one)")
    add(f"{f}.no_master_ms", MS, "time without a master, summed over the failovers")
    add(f"{f}.max_namesrv_stale_ms", MS, "the longest a namesrv's table kept a failover's old master")
    add(f"{f}.max_client_stale_ms", MS, "the longest a client's route kept a failover's old master")
    add(f"{f}.unseen_views", COUNT, "(failover, namesrv or client) views that never showed the new master within "
                                    "the failover")
    add(f"{f}.max_rto_ms", MS, "the longest producer recovery: first failed send to a group in a failover to the "
                               "producer's next ok one (openchaos' RTO)")
    add(f"{f}.acked_lost", COUNT, "acked messages first acked by a DLedger group that a subscribing consumer "
                                  "group still consuming never had: 0 with quorum writes")
    add(f"{f}.duplicates", COUNT, "(consumer group, message) pairs consumed from two places after a failed "
                                  "attempt (timeout or SYSTEM_ERROR) to a DLedger group was committed anyway "
                                  "and retried")
    add(f"{f}.reconsumed", COUNT, "(consumer group, message) pairs delivered again from the same place after a "
                                  "failover (consumer offsets are not replicated)")
    add(f"{f}.truncated", COUNT, "log entries followers had cut (dledger.truncate): writes no quorum held")
    add(f"{f}.stale_master_sends", GROUP, "send attempts to a failover's old master, at its address, after it "
                                          "stopped leading")
    add(f"{f}.stale_master_sends.total", COUNT, "such attempts")
    add(f"{f}.stale_master_sends.by_got", GROUP, "... by what they got, first match wins")
    for got in GOT:
        add(f"{f}.stale_master_sends.by_got.{got}", COUNT, _GOT_TEXT[got])
    table(f"{f}.stale_master_sends.by_failover", "one row per (failover, what they got)",
          (*_KEY, ("got", TEXT, "what they got"), ("sends", COUNT, "attempts")))
    table(f"{f}.groups", "one row per DLedger group", (
        _KEY[0], ("peers", COUNT, "its members (dLegerPeers)"), ("elections", COUNT, "its leaderships"),
        ("failovers", COUNT, "its failovers"), ("max_term", NUMBER, "the largest term a member logged"),
        ("no_master_ms", MS, "time without a master over its failovers"),
        ("max_no_master_ms", MS, "the longest of them"),
        ("stale_master_sends", COUNT, "attempts to an old master of it"),
        ("acked_lost", COUNT, "acked messages lost (`failover.acked_lost`)"),
        ("duplicates", COUNT, "pairs duplicated by retried sends committed anyway"),
        ("reconsumed", COUNT, "pairs re-consumed after a failover"),
        ("truncated", COUNT, "log entries cut")))
    table(f"{f}.faults", "one row per (group, fault that hit one of its members); not restarts or resumes", (
        _KEY[0], ("fault_id", TEXT, "the fault"), ("fault", TEXT, "its kind"),
        ("start_offset_ms", MS, "its start, from the run's first event"),
        ("hit", TEXT, "`leader` (its targets held the group's leader then) or `follower`"),
        ("failovers", COUNT, "failovers it caused")))
    table(f"{f}.changes", f"one row per {_FAILOVER}", (
        *_KEY, ("leader", TEXT, "the new leader's peer id"), ("node", TEXT, "its node"),
        ("old_term", NUMBER, "the old leadership's term"), ("old_leader", TEXT, "the old leader's peer id"),
        ("old_node", TEXT, "its node"),
        ("fault_id", TEXT, "the fault behind it: the latest from the old leadership to the election that hit the "
                           "old leader, else a member (null: none)"),
        ("fault", TEXT, "its kind"), ("hit", TEXT, "`leader` or `follower`"),
        ("stopped_offset_ms", MS, "when the old leader stopped leading: its leadership's end, or its fault's start"),
        ("elected_offset_ms", MS, "the new leader's election"),
        ("master_offset_ms", MS, "its broker's broker.role with brokerId 0 (null: none in the failover)"),
        ("election_ms", MS, "stopped to elected"), ("no_master_ms", MS, "stopped to master (or to the failover's end)"),
        ("namesrvs_stale_ms", MS, "the slowest namesrv of it (`failover.views`)"),
        ("clients_stale_ms", MS, "the slowest client"),
        ("unseen_views", COUNT, "views that never showed the new master"),
        ("stale_master_sends", COUNT, "attempts to the old master"),
        ("rto_ms", MS, "the slowest producer recovery (`failover.rto`)"),
        ("producers_failed", COUNT, "producers with a failed attempt to the group in it"),
        ("duplicates", COUNT, "pairs duplicated by a retried send whose failed attempt was in it"),
        ("reconsumed", COUNT, "pairs re-consumed after it")))
    table(f"{f}.views", "one row per (failover, namesrv) and (failover, client with a route of the group's "
                        "topics)", (
        *_KEY, ("who", TEXT, "`namesrv` or `client`"), ("node", TEXT, "the node"),
        ("by", TEXT, "what showed the new master: `ns.broker` (its register, brokerId 0, at the new address), "
                     "`ns.route` (the group's master back in the route), `client.route` (a route from a namesrv "
                     "that showed it); null: nothing"),
        ("seen_offset_ms", MS, "when, from the run's first event (null: not within the failover)"),
        ("stale_ms", MS, "from the old leader's stop to then (else to the failover's end)")))
    table(f"{f}.rto", "one row per (failover, producer with a failed attempt to the group in it)", (
        *_KEY, ("producer", TEXT, "the producer node"),
        ("failed_offset_ms", MS, "its first failed attempt to the group in the failover"),
        ("recovered_offset_ms", MS, "its next ok attempt to the group (null: none by run.stop)"),
        ("rto_ms", MS, "failed to recovered (to run.stop, else the run's end, without one)")))
    table(f"{f}.lost", "one row per (consumer group, acked message) lost (`failover.acked_lost`)", (
        _KEY[0], ("consumer_group", TEXT, "the consumer group that never had it"), ("topic", TEXT, "its topic"),
        ("msg_id", TEXT, "the message")))
    return out
