"""DLedger's election and log as a state machine under random faults, Jepsen-style (docs/rocketmq-model.md
§8): random schedules of kills, pauses, cut links and clock jumps on the fake network, a writer
appending throughout, then every fault healed. The net checks the invariants as it runs
(:mod:`tests.roles.dledger_net`): one leader a term, acknowledged appends on a majority and in
every later leader's log; afterwards the group must settle on one leader and every peer catch up.
The last test shows the same checks catch a vote that forgets to compare logs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.roles.dledger import election_rpc, elector, server
from tests.roles.dledger_net import Net
from tests.roles.dledger_schedules import SETTLE_BOUND_MS, Step, play, steps


def check(outcome_net: Net, schedule: list[Step]) -> None:
    outcome = play(outcome_net, schedule)
    assert outcome.violations == [], schedule
    assert outcome.settled_after_ms is not None, f"no single leader {SETTLE_BOUND_MS:.0f} ms after the heal: {schedule}"
    assert outcome.missing == [], schedule


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps(peers=3), seed=st.integers(0, 2**16))
def test_three_peers_keep_acknowledged_appends_and_settle_under_random_faults(schedule: list[Step], seed: int) -> None:
    check(Net(peers=3, seed=seed), schedule)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps(peers=5, max_steps=8), seed=st.integers(0, 2**16))
def test_five_peers_too(schedule: list[Step], seed: int) -> None:
    check(Net(peers=5, seed=seed), schedule)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps(peers=2, max_steps=4), seed=st.integers(0, 2**16))
def test_two_peers_need_both_and_still_lose_nothing(schedule: list[Step], seed: int) -> None:
    check(Net(peers=2, seed=seed), schedule)


# a follower cut off while the leader writes, the leader killed, the follower back just as the
# one that holds every write times out: both run for the next term
LAGGER_RACE: list[Step] = [(5000.0, "isolate_follower", 0, 16500.0, 0.0), (15000.0, "kill_leader", 0, 60000.0, 0.0)]


@contextmanager
def votes_ignoring_the_log() -> Iterator[None]:
    """A broken vote rule: the voter compares the candidate's log with an empty one."""

    class Blind:
        end_term = end_index = -1

        def __init__(self, log: object) -> None:
            self.get = log.get  # type: ignore[attr-defined]

    real = election_rpc.handle_vote

    def blind(el, req, now, self_vote=False):  # type: ignore[no-untyped-def]
        log, el.log = el.log, Blind(el.log)
        try:
            return real(el, req, now, self_vote)
        finally:
            el.log = log

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(elector, "handle_vote", blind)
        mp.setattr(server, "handle_vote", blind)
        yield


def test_the_lagger_race_loses_nothing_with_the_real_vote_rule() -> None:
    for seed in range(12):
        check(Net(seed=seed), LAGGER_RACE)


def test_the_invariants_catch_a_vote_that_does_not_compare_logs() -> None:
    caught = []
    with votes_ignoring_the_log():
        for seed in range(12):
            outcome = play(Net(seed=seed), LAGGER_RACE)
            caught += [v for v in outcome.violations if "without acked entries" in v]
    assert caught, "a leader elected without the acknowledged appends went unnoticed"
