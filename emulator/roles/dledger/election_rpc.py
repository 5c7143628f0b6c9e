"""The answering side of the election: a peer's VOTE and HEART_BEAT, as dledger 0.2.6's
``DLedgerLeaderElector.handleVote`` and ``handleHeartBeat`` decide them (docs/rocketmq-model.md §8.1).

The vote compares the logs first (a candidate whose last entry is of an older term, or of the
same term but shorter, is refused whatever its term), then the term, then the one vote a term.
A request of a larger term makes the voter a candidate that raises its own term at once and
answers "term not ready", so the candidate asks again in that term.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.roles.common.base import Action, Now
from rmqemu.emulator.roles.dledger.wire import Code, Vote, int_field

if TYPE_CHECKING:
    from rmqemu.emulator.roles.dledger.elector import Elector


def handle_vote(el: "Elector", req: dict[str, Any], now: Now, self_vote: bool = False) -> tuple[str, int, list[Action]]:
    """``handleVote``: (result, the term answered, actions: the vote's persist, a role change)."""
    m, log = el.m, el.log
    leader = req.get("leaderId")
    term, end_term, end_index = (int_field(req, k) for k in ("term", "ledgerEndTerm", "ledgerEndIndex"))
    if not m.is_peer(leader):
        return Vote.REJECT_UNKNOWN_LEADER, m.term, []
    if not self_vote and leader == m.cfg.self_id:
        return Vote.REJECT_UNEXPECTED_LEADER, m.term, []
    if end_term < log.end_term:
        return Vote.REJECT_EXPIRED_LEDGER_TERM, m.term, []
    if end_term == log.end_term and end_index < log.end_index:
        return Vote.REJECT_SMALL_LEDGER_END_INDEX, m.term, []
    if term < m.term:
        return Vote.REJECT_EXPIRED_VOTE_TERM, m.term, []
    if term > m.term:  # stepped down by a larger term: raise ours first, vote when asked again
        actions = el._to_candidate(term, now)
        el.need_increase = True
        return Vote.REJECT_TERM_NOT_READY, m.term, actions + el.arm(now)
    if m.vote_for is not None and m.vote_for != leader:
        return (Vote.REJECT_ALREADY_HAS_LEADER if m.leader_id is not None else Vote.REJECT_ALREADY_VOTED), m.term, []
    if term < log.end_term:
        return Vote.REJECT_TERM_SMALL_THAN_LEDGER, log.end_term, []
    if not self_vote and el.taking_leadership() and end_term == log.end_term and log.end_index >= end_index:
        return Vote.REJECT_TAKING_LEADERSHIP, m.term, []
    return Vote.ACCEPT, m.term, [m.set_vote(str(leader))]


def handle_heartbeat(el: "Elector", req: dict[str, Any], now: Now) -> tuple[dict[str, Any], list[Action]]:
    """``handleHeartBeat``: (the answer's fields, actions). A heartbeat of our term from a leader
    we know, or when we know none, keeps or makes us its follower."""
    m = el.m
    leader, term = req.get("leaderId"), int_field(req, "term")
    if not m.is_peer(leader):
        return {"code": Code.UNKNOWN_MEMBER, "term": m.term}, []
    if leader == m.cfg.self_id:
        return {"code": Code.UNEXPECTED_MEMBER, "term": m.term}, []
    if term < m.term:
        return {"code": Code.EXPIRED_TERM, "term": m.term}, []
    if term == m.term:
        if m.leader_id is None:
            return {"code": Code.SUCCESS, "term": m.term}, el.to_follower(term, str(leader), now) + el.arm(now)
        if leader == m.leader_id:
            el.last_leader_hb = now.wall_ms
            return {"code": Code.SUCCESS, "term": m.term}, el.arm(now)
        return {"code": Code.INCONSISTENT_LEADER, "term": m.term}, []
    # a larger term: become a candidate that raises its term at once (not yet a follower)
    actions = el._to_candidate(term, now)
    el.need_increase = True
    return {"code": Code.TERM_NOT_READY, "term": m.term}, actions + el.arm(now)
