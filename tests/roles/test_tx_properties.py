"""A master's transactions as a state machine under random faults (docs/rocketmq-model.md §9),
Jepsen-style: random schedules of halves with random plans, lost ends, a producer that goes and
comes back, the master killed or stopped and restarted on its store, its clock jumped; then every
fault healed and the checks left to run out (:mod:`tests.roles.tx_schedules`). Invariants: a
message is visible once per commit and only if someone committed it; no half is checked before its
immunity or more than the maximum; after the heal every half is committed, rolled back or discarded.
The last tests show the invariants catch a broken discard rule and a rollback that stores."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings

from rmqemu.emulator.roles.broker.transaction import end_processor
from rmqemu.emulator.roles.broker.transaction.check_service import CheckService
from tests.roles.tx_schedules import Step, play, steps, violations


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps())
def test_halves_resolve_exactly_under_random_faults(schedule: list[Step]) -> None:
    assert violations(play(schedule)) == [], schedule


# two halves the producer leaves open and keeps answering UNKNOWN, one it commits, one it rolls back
UNDECIDED: list[Step] = [("half", ("unknown", "unknown")), ("half", ("lost", "unknown")),
                         ("half", ("commit", "commit")), ("half", ("rollback", "rollback")), ("advance", 500)]


def test_a_fixed_schedule_holds_with_the_real_rules() -> None:
    assert violations(play(UNDECIDED)) == []


@contextmanager
def never_discarding() -> Iterator[None]:
    """A broken rule: the count rises forever and no half is ever given up."""
    def count_only(self: CheckService, props: dict[str, str]) -> bool:
        props["TRANSACTION_CHECK_TIMES"] = str(int(props.get("TRANSACTION_CHECK_TIMES", "0")) + 1)
        return False

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CheckService, "_need_discard", count_only)
        yield


def test_the_invariants_catch_a_check_service_that_never_discards() -> None:
    with never_discarding():
        found = violations(play(UNDECIDED))
    assert any("of at most" in v for v in found) and any("still open" in v for v in found), found


def test_the_invariants_catch_a_rollback_that_stores_the_message() -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(end_processor, "ROLLBACK_TYPE", -1)  # a rollback falls through to the commit path
        found = violations(play(UNDECIDED))
    assert any("visible though nobody committed it" in v for v in found), found
