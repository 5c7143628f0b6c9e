"""DLedger's leader election (docs/rocketmq-model.md §8.1) on the fake network, peer by peer
under the real node runtime: the vote rule, terms, heartbeats, step-down, persistence, clocks."""

from __future__ import annotations

import pytest

from rmqemu.emulator.roles.common.base import Now
from rmqemu.emulator.roles.dledger.election_rpc import handle_heartbeat, handle_vote
from rmqemu.emulator.roles.dledger.member import TERM_FILE
from rmqemu.emulator.roles.dledger.member import Role as DRole
from rmqemu.emulator.roles.dledger.wire import Code, Vote
from tests.roles.dledger_net import Net


def started(seed: int = 1, peers: int = 3) -> Net:
    net = Net(peers=peers, seed=seed)
    net.start()
    net.run_for(5000)
    assert net.settled(), [net.server(n).snapshot() for n in net.drivers]
    return net


def roles(net: Net, name: str) -> list[dict]:
    return net.drivers[name].events("dledger.role")


@pytest.mark.parametrize("peers", [2, 3, 5])
def test_a_fresh_group_elects_one_leader_after_a_failed_first_ballot_in_term_0(peers: int) -> None:
    net = started(peers=peers)
    leader = net.leader()
    assert leader is not None and not net.violations
    # every peer voted for itself in term 0 at start, so term 0 elects no one: the leader's term is 1 or more
    assert net.server(leader).member.term >= 1
    assert all(net.server(n).member.leader_id == net.server(leader).cfg.self_id for n in net.drivers)
    assert [e["role"] for e in roles(net, leader)][-1] == "LEADER"


def test_the_vote_compares_logs_before_terms_and_gives_one_vote_a_term() -> None:
    net = started()
    follower = next(n for n in net.drivers if n != net.leader())
    el, now = net.server(follower).elector, Now(0.0, 0.0, 0.0)
    net.append(net.leader())
    net.run_for(1000)
    log = net.server(follower).log
    assert log.end_index == 0
    term, other = el.m.term, next(p for p in el.cfg.peers if p not in (el.cfg.self_id, el.m.vote_for))

    def vote(**kw: int) -> str:
        req = {"leaderId": other, "term": term, "ledgerEndTerm": log.end_term, "ledgerEndIndex": log.end_index, **kw}
        return handle_vote(el, req, now)[0]

    assert vote(term=term + 5, ledgerEndTerm=log.end_term - 1) == Vote.REJECT_EXPIRED_LEDGER_TERM
    assert vote(term=term + 5, ledgerEndIndex=-1) == Vote.REJECT_SMALL_LEDGER_END_INDEX
    assert vote(term=term - 1) == Vote.REJECT_EXPIRED_VOTE_TERM
    assert vote() == Vote.REJECT_ALREADY_HAS_LEADER  # it voted for the leader in this term
    newer = {"leaderId": other, "term": term + 1, "ledgerEndTerm": log.end_term, "ledgerEndIndex": log.end_index}
    result, answered_term, _ = handle_vote(el, newer, now)
    assert (result, answered_term) == (Vote.REJECT_TERM_NOT_READY, term)  # a larger term: step down first
    assert el.m.role is DRole.CANDIDATE and el.need_increase
    assert vote(term=term + 1) == Vote.REJECT_TERM_NOT_READY  # its term moves only at its next ballot


def test_a_heartbeat_of_an_older_term_is_refused_and_a_newer_one_makes_a_candidate() -> None:
    net = started()
    follower = next(n for n in net.drivers if n != net.leader())
    el, now = net.server(follower).elector, Now(0.0, 0.0, 0.0)
    term, leader = el.m.term, el.m.leader_id
    assert handle_heartbeat(el, {"leaderId": leader, "term": term - 1}, now)[0]["code"] == Code.EXPIRED_TERM
    stranger = next(p for p in el.cfg.peers if p not in (leader, el.cfg.self_id))
    assert handle_heartbeat(el, {"leaderId": stranger, "term": term}, now)[0]["code"] == Code.INCONSISTENT_LEADER
    assert handle_heartbeat(el, {"leaderId": "n9", "term": term}, now)[0]["code"] == Code.UNKNOWN_MEMBER
    answer, _ = handle_heartbeat(el, {"leaderId": stranger, "term": term + 3}, now)
    assert answer["code"] == Code.TERM_NOT_READY and el.m.role is DRole.CANDIDATE and el.m.known_max_term == term + 3


def test_a_leader_cut_off_from_its_followers_steps_down_after_three_heartbeats() -> None:
    net = started()
    leader = net.leader()
    assert leader is not None
    others = [n for n in net.drivers if n != leader]
    cut_at, old_term = net.time.mono_ms, net.server(leader).member.term
    net.cut |= {(leader, o) for o in others} | {(o, leader) for o in others}
    net.run_for(15000)
    down = [t for t, n, _, role in net.role_log if n == leader and t > cut_at and role is DRole.CANDIDATE]
    # no quorum heartbeat for more than 3 intervals (6 s, from the last one before the cut), found
    # at the end of a heartbeat round (which waits 2 s for answers)
    assert down and 4000 <= down[0] - cut_at <= 10000, (down, cut_at)
    new = net.leader()
    assert new in others and net.server(new).member.term > old_term
    assert not net.violations


def test_an_isolated_member_does_not_inflate_its_term() -> None:
    net = started()
    follower = next(n for n in net.drivers if n != net.leader())
    before = net.server(follower).member.term
    others = [n for n in net.drivers if n != follower]
    net.cut |= {(follower, o) for o in others} | {(o, follower) for o in others}
    net.run_for(60000)
    s = net.server(follower)
    assert s.member.role is DRole.CANDIDATE and s.elector.ballots > 10  # a ballot waits 2-3 s for no answer
    # a ballot that no quorum answered raises nothing (dledger's "pre-vote"): at most the one raise
    # a ballot that a quorum answered would have made
    assert s.member.term == before
    net.cut.clear()
    net.run_for(15000)
    assert net.settled() and not net.violations


def test_term_and_vote_survive_a_restart() -> None:
    net = started()
    name = next(n for n in net.drivers if n != net.leader())
    term, vote = net.server(name).member.term, net.server(name).member.vote_for
    assert net.stores[name].files[TERM_FILE] == f"currTerm={term}\nvoteLeader={vote}\n"
    net.kill(name)
    net.restart(name)
    s = net.server(name)
    assert (s.member.term, s.member.vote_for, s.member.role) == (term, vote, DRole.CANDIDATE)
    net.run_for(5000)
    assert net.settled() and not net.violations


def test_a_follower_whose_clock_jumps_ahead_times_out_on_its_own_clock() -> None:
    net = started()
    follower = next(n for n in net.drivers if n != net.leader())
    mark = len(roles(net, follower))
    net.bump(follower, 7000.0)  # past 3 heartbeat intervals at once: the leader's last beat looks 7 s old
    net.run_for(1)
    assert [e["role"] for e in roles(net, follower)[mark:]][:1] == ["CANDIDATE"]
    net.run_for(10000)
    assert net.settled() and not net.violations


def test_a_follower_whose_clock_jumps_back_keeps_following() -> None:
    net = started()
    follower = next(n for n in net.drivers if n != net.leader())
    mark = len(roles(net, follower))
    net.bump(follower, -60000.0)
    net.run_for(20000)
    assert roles(net, follower)[mark:] == [] and net.settled()


def test_killing_the_leader_elects_another_within_dledgers_band() -> None:
    net = started()
    leader = net.leader()
    assert leader is not None
    killed_at = net.time.mono_ms
    net.kill(leader)
    while net.leader() is None and net.time.mono_ms - killed_at < 30000:
        net.run_for(50)
    took = net.time.mono_ms - killed_at
    # 6 s without a heartbeat (counted from the last one, up to 2 s before the kill), then ballots
    assert net.leader() is not None and 4000 <= took <= 12000, took
    assert not net.violations
