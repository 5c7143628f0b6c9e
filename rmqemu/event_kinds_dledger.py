"""The event kinds of DLedger broker groups (a section of the registry, :mod:`rmqemu.event_kinds`
lists it in ``SECTIONS``): what each peer's DLedger member did, and what its broker made of it.

With them the report follows a moving master (docs/rocketmq-model.md §8): ``dledger.role`` says
when a peer stopped leading and when another was elected, in which term; ``broker.role`` when
the broker behind it took brokerId 0 (or gave it up) and registered; ``dledger.truncate`` what
an old leader lost of what no quorum held. The namesrvs' ``ns.broker`` and the clients'
``client.route`` then show the route following.
"""

from __future__ import annotations

from rmqemu.event_types import INT, LONG, STR, Field, Kind, ListOf, Section

_MEMBER = (
    Field("group", STR, "the DLedger group: the broker name (`dLegerGroup`)", required=True),
    Field("peer", STR, "this member's id (`dLegerSelfId`: `n0`, `n1`, ...)", required=True),
    Field("term", LONG, "the member's term", required=True),
)

DLEDGER = Section("DLedger broker groups", (
    Kind("dledger.role", "broker (DLedger peers)", "the member changed role or term: `CANDIDATE` (no leader "
         "known; `term` is the largest it knows of, which it takes at its next ballot), `FOLLOWER` (of `leader`) or "
         "`LEADER`", _MEMBER + (
             Field("role", STR, "`CANDIDATE`, `FOLLOWER` or `LEADER`", required=True),
             Field("leader", STR, "the leader's peer id (`null` for a candidate)", required=True, nullable=True),
             Field("ledger_end_index", LONG, "the index of the member's last entry (-1: none)", required=True),
             Field("committed_index", LONG, "the last entry it knows committed (-1: none)", required=True),
         )),
    Kind("dledger.truncate", "broker (DLedger peers)", "the leader had this follower cut its log after the last "
         "entry both agree on: entries no quorum held, usually an old leader's", _MEMBER + (
             Field("index", LONG, "the entry the log now ends at (the leader's entry at that index)",
                   required=True),
             Field("removed", INT, "how many entries were cut off", required=True),
             Field("removed_terms", ListOf(LONG), "the terms those entries were written in", required=True),
         )),
    Kind("broker.role", "broker (DLedger peers)", "the role-change handler finished: the broker is now the "
         "group's master (brokerId 0, `SYNC_MASTER`) or a slave (brokerId `n + 1`), and registered one-way "
         "with every namesrv (docs/rocketmq-model.md §8.3)", (
             Field("broker", STR, required=True), Field("broker_id", INT, required=True),
             Field("role", STR, "`SYNC_MASTER` or `SLAVE`", required=True),
             Field("term", LONG, "the DLedger term of the change", required=True),
         )),
))
