"""Leadership transfer to a preferred leader (docs/rocketmq-model.md §8.4) on the fake network."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.roles.dledger.member import Role as DRole
from rmqemu.emulator.roles.dledger.wire import Code
from tests.roles.dledger_net import Net
from tests.roles.dledger_schedules import CATCH_UP_BOUND_MS, Step, steps
from tests.roles.test_dledger_properties import check
from tests.roles.test_dledger_replication import append


def leader_id(net: Net) -> str | None:
    name = net.leader()
    return net.server(name).cfg.self_id if name else None


def test_the_preferred_peer_takes_over_in_the_next_term_and_appends_wait_meanwhile() -> None:
    for seed in range(6):
        net = Net(seed=seed, preferred="n2")
        net.start()
        net.run_for(600)
        first = net.leader()
        if first is None or leader_id(net) == "n2":
            continue  # the preferred peer won the first election itself: nothing to transfer
        term = net.server(first).member.term
        codes = []
        while net.time.mono_ms < 10000 and leader_id(net) != "n2":
            if net.server(first).member.transferee is not None:
                codes += append(net, first, "during")
            net.run_for(5)
        assert leader_id(net) == "n2", seed
        assert net.server(net.leader()).member.term == term + 1
        assert codes and set(codes) == {Code.LEADER_TRANSFERRING}
        net.run_for(3000)
        assert net.settled() and not net.violations
        return
    raise AssertionError("no seed elected another peer first")


def until(net: Net, done: Callable[[], bool], bound_ms: float) -> bool:
    start = net.time.mono_ms
    while not done() and net.time.mono_ms - start < bound_ms:
        net.run_for(50)
    return done()


def test_a_killed_preferred_leader_takes_its_place_back_after_its_restart() -> None:
    net = Net(seed=3, preferred="n1")
    net.start()
    assert until(net, lambda: leader_id(net) == "n1", 20000)
    net.kill("g-n1")
    assert until(net, lambda: leader_id(net) in ("n0", "n2"), 20000)
    for i in range(5):
        append(net, net.leader(), f"m{i}")
    net.run_for(500)
    net.restart("g-n1")
    assert until(net, lambda: leader_id(net) == "n1", 20000)
    net.run_for(3000)
    assert net.settled() and not net.violations
    assert len([r for _, n, _, r in net.role_log if n == "g-n1" and r is DRole.LEADER]) == 2


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps(peers=3), seed=st.integers(0, 2**16), preferred=st.sampled_from(["n0", "n1", "n2"]))
def test_with_a_preferred_leader_the_invariants_hold_under_random_faults(schedule: list[Step], seed: int,
                                                                        preferred: str) -> None:
    check(Net(peers=3, seed=seed, preferred=preferred), schedule)


# found by the property test above: n1, preferred, leads again with the compare index its
# dispatcher for n0 kept from an earlier term (dledger 0.2.6, docs/rocketmq-model.md §8.2)
STALE_COMPARE: list[Step] = [(0.0, "isolate", 0, 8394.25, 0.0), (8724.54, "isolate", 1, 9585.0, 0.0),
                             (12872.79, "isolate", 1, 18212.82, 0.0), (29349.75, "isolate_leader", 0, 200.0, 0.0),
                             (18462.0, "kill", 2, 6572.0, 0.0)]


def test_a_stale_compare_index_cuts_a_follower_only_while_the_leader_holds_the_entries() -> None:
    net = Net(peers=3, seed=2752, preferred="n1")
    check(net, STALE_COMPARE)
    assert net.leader_held_cuts > 0  # the cut happened: acked entries were on the leader alone a while


# found by the property test above: n0, preferred, steps down in term 3 (no quorum) and holds a
# ballot in that same term; n2, paused as n0's follower, wakes and accepts it again (its vote of
# term 3 is n0's), and n0 is paused just before the answer comes. n1 and n2 then elect n2 in
# term 4 and ack appends; n0 wakes 13.7 s later, counts the ballot, and leads term 3 without them
# (dledger 0.2.6 too: docs/rocketmq-model.md §8.2), until its heartbeat meets term 4
LATE_LEADER: list[Step] = [(0.0, "kill", 0, 200.0, 0.0), (0.0, "kill", 0, 200.0, 0.0),
                           (200.0, "kill", 0, 15180.0, 0.0), (14530.0, "kill", 1, 12614.0, 0.0),
                           (22507.0, "pause", 2, 6003.0, 0.0), (28514.0, "pause", 0, 13730.0, 0.0)]


def test_a_ballot_won_before_a_pause_makes_a_leader_of_an_older_term_that_acks_nothing() -> None:
    net = Net(peers=3, seed=0, preferred="n0")
    check(net, LATE_LEADER)
    assert net.late_leaders > 0  # n0 led term 3 after term 4 had acked entries
    late = [(t, term) for t, n, term, r in net.role_log if n == "g-n0" and r is DRole.LEADER]
    assert late[-1][1] == 3 and max(e.term for e in net.acked.values()) == 4


# found by the property test above: n0, paused for 20 s, answers the appends queued meanwhile
# after the leader's requests timed out; its watermark stays behind what it holds, and dledger
# 0.2.6 re-acks such a follower one entry a second (docs/rocketmq-model.md §8.2): 114 entries
# take about 112 s, past a fixed catch-up bound of 60 s
LOST_ACKS: list[Step] = [(0.0, "kill", 0, 200.0, 0.0), (0.0, "kill", 0, 200.0, 0.0),
                         (4585.819017490654, "pause", 0, 19846.875857106217, 0.0),
                         (19404.37552966229, "oneway", 1, 200.0, 0.0), (36015.0, "isolate", 0, 200.0, 0.0)]


def test_a_follower_whose_acks_were_lost_catches_up_an_entry_a_second() -> None:
    net = Net(peers=3, seed=0, preferred="n1")
    check(net, LOST_ACKS)
    assert net.time.mono_ms > 41000 + CATCH_UP_BOUND_MS  # healed at 40 s: the catch-up outlasted 60 s
