"""DLedger's replicated log (docs/rocketmq-model.md §8.2) on the fake network: quorum acks and
their timeout, a diverged tail cut, a new leader committing the tail it inherited."""

from __future__ import annotations

from rmqemu.emulator.roles.common.base import Action, Now
from rmqemu.emulator.roles.dledger.wire import Code
from tests.roles.dledger_net import Net
from tests.roles.test_dledger_election import started


def append(net: Net, name: str, body: str) -> list[int]:
    """Append ``body`` on ``name``; the list fills with the DLedger code when it is answered."""
    codes: list[int] = []

    def done(code: int, now: Now) -> list[Action]:
        codes.append(code)
        return []

    server = net.server(name)
    net.drivers[name].run(lambda now: server.append(body, now, done)[1])
    return codes


def test_an_append_is_acked_once_a_majority_holds_it_and_committed_everywhere() -> None:
    net = started()
    leader = net.leader()
    assert leader is not None
    followers = [n for n in net.drivers if n != leader]
    net.kill(followers[0])  # two of three still hold a quorum
    codes = append(net, leader, "héllo\u2028wörld\x00")
    net.run_for(200)
    assert codes == [Code.SUCCESS]
    assert followers[1] not in net.commits  # a follower learns of it with the next push
    net.run_for(1200)  # a bare COMMIT after 1 s without one
    assert [e.body for e in net.commits[followers[1]]] == ["héllo\u2028wörld\x00"]
    net.restart(followers[0])
    net.run_for(3000)
    assert [e.body for e in net.commits[followers[0]]] == ["héllo\u2028wörld\x00"]


def test_without_a_quorum_an_append_times_out_after_2500_ms_and_a_non_leader_refuses() -> None:
    net = started()
    leader = net.leader()
    assert leader is not None
    for n in [n for n in net.drivers if n != leader]:
        net.kill(n)
    codes = append(net, leader, "alone")
    net.run_for(2400)
    assert codes == []
    net.run_for(300)
    assert codes == [Code.WAIT_QUORUM_ACK_TIMEOUT]
    net.run_for(8000)  # no quorum heartbeat: it stepped down, and a non-leader refuses at once
    assert not net.server(leader).is_leader
    assert append(net, leader, "late") == [Code.NOT_LEADER]


def test_an_old_leaders_diverged_tail_is_cut_and_the_logs_agree() -> None:
    net = started()
    old = net.leader()
    assert old is not None
    others = [n for n in net.drivers if n != old]
    append(net, old, "both")
    net.run_for(500)
    old_term = net.server(old).member.term
    net.cut |= {(old, o) for o in others} | {(o, old) for o in others}
    stranded = [append(net, old, f"stranded {i}") for i in range(3)]  # no quorum: never acked
    net.run_for(12000)
    new = net.leader()
    assert new in others
    acked = [append(net, new, f"new {i}") for i in range(2)]
    net.run_for(500)
    net.cut.clear()
    net.run_for(8000)
    assert all(c == [Code.SUCCESS] for c in acked)
    assert all(c == [Code.WAIT_QUORUM_ACK_TIMEOUT] for c in stranded)
    cut = net.drivers[old].events("dledger.truncate")
    assert [(e["removed"], e["removed_terms"]) for e in cut] == [(3, [old_term])]
    bodies = {n: [e.body for e in net.server(n).log.entries] for n in net.drivers}
    assert bodies[old] == bodies[new] == ["both", "new 0", "new 1"]
    assert not net.violations


def test_a_new_leader_keeps_and_commits_the_tail_it_inherited_unacked() -> None:
    """The write reached one follower but its ack never came back: the writer saw no SEND_OK,
    yet the follower that holds it wins the election (longer log) and commits it: a retry of
    that send would store it twice (docs/rocketmq-model.md §8.2)."""
    net = started()
    old = net.leader()
    assert old is not None
    holder, lagger = [n for n in net.drivers if n != old]
    assert append(net, old, "sure") == [] and not net.run_for(1500)
    net.cut |= {(old, lagger), (holder, old)}  # the push reaches `holder`, whose answer is lost
    codes = append(net, old, "in doubt")
    net.run_for(2600)
    assert codes == [Code.WAIT_QUORUM_ACK_TIMEOUT]
    assert [e.body for e in net.server(holder).log.entries] == ["sure", "in doubt"]
    assert net.server(holder).log.committed_index == 0
    net.kill(old)
    net.cut.clear()
    net.run_for(15000)
    assert net.leader() == holder
    for n in (holder, lagger):
        assert [e.body for e in net.commits[n]] == ["sure", "in doubt"]
    assert not net.violations
