"""The end-of-run drain's logic with fake offsets and a fake clock (emulator/launcher/drain.py):
what is left behind, when the wait ends, what ``run.drain`` says."""

from __future__ import annotations

from typing import Any

from rmqemu import events
from rmqemu.emulator.launcher.drain import Backlog, GroupWatch, Lag, backlog_of, groups_to_watch, wait_drained
from rmqemu.emulator.launcher.topology_load import parse_topology, plan_nodes

CG = GroupWatch("cg", ("%RETRY%cg", "T"), False, ("cg-0", "cg-1"))


def _master(queues: dict[str, int], offsets: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    return {"queues": queues, "offsets": offsets or {}}


def test_groups_watch_their_subscriptions_and_a_clustering_group_its_retry_topic() -> None:
    topo = parse_topology({
        "name": "g", "brokers": [{"name": "broker-a"}], "topics": [{"name": "T", "brokers": ["broker-a"]}],
        "consumers": [{"group": "cg", "instances": 2, "subscribe": ["T:tagA||tagB"]},
                      {"group": "cg", "subscribe": ["U"]},
                      {"group": "bc", "subscribe": ["T"], "messageModel": "BROADCASTING"}],
    }, "g")
    got = {g.group: g for g in groups_to_watch(plan_nodes(topo))}
    assert got["cg"] == GroupWatch("cg", ("%RETRY%cg", "T", "U"), False, ("cg-0", "cg-1", "cg-2"))
    assert got["bc"] == GroupWatch("bc", ("T",), True, ("bc-0",))


def test_backlog_compares_each_masters_max_offset_with_the_groups_committed_offset() -> None:
    masters = {
        "broker-a": _master({"T:0": 5, "T:1": 3, "Other:0": 9, "%RETRY%cg:0": 2},
                            {"T@cg": {"0": 5, "1": 1}, "%RETRY%cg@cg": {"0": 2}, "T@other": {"0": 0}}),
        "broker-b": _master({"T:0": 4, "T:1": 0}),  # nothing committed: all 4 are left
    }
    got = backlog_of([CG], masters, {})
    assert got.lags == [Lag("cg", "T", "broker-a", 1, 2), Lag("cg", "T", "broker-b", 0, 4)]
    assert got.unreadable == [] and not got.empty


def test_a_caught_up_group_leaves_nothing_and_an_unreadable_master_is_named() -> None:
    masters = {"broker-a": _master({"T:0": 5}, {"T@cg": {"0": 5}}), "broker-b": None}
    got = backlog_of([CG], masters, {})
    assert got.lags == [] and got.unreadable == ["broker-b"] and not got.empty
    assert backlog_of([CG], {"broker-a": masters["broker-a"]}, {}).empty


def test_a_broadcasting_group_is_behind_for_each_live_instance_and_wholly_when_none_runs() -> None:
    bc = GroupWatch("bc", ("T",), True, ("bc-0", "bc-1"))
    masters = {"broker-a": _master({"T:0": 5}, {"T@bc": {"0": 5}})}  # the broker's table is not theirs
    consumers = {"bc-0": {"offsets": [["T", "broker-a", 0, 5]]}, "bc-1": {"offsets": [["T", "broker-a", 0, 2]]}}
    assert backlog_of([bc], masters, consumers).lags == [Lag("bc", "T", "broker-a", 0, 3, "bc-1")]
    assert backlog_of([bc], masters, {"bc-0": None, "bc-1": None}).lags == [Lag("bc", "T", "broker-a", 0, 5)]


def test_a_pop_group_waits_for_its_leases_on_every_master() -> None:
    pg = GroupWatch("pg", ("%RETRY%pg", "%RETRY%pg_T", "T"), False, ("pg-0",))
    caught_up = {"T@pg": {"0": 5}}
    leased = {**_master({"T:0": 5}, caught_up), "pop": {"in_flight": [["T", "pg", 0, 2], ["T", "other", 0, 7],
                                                                       ["%RETRY%pg_T", "pg", 0, 1]]}}
    got = backlog_of([pg], {"broker-a": leased, "broker-b": _master({"T:0": 0})}, {})
    assert got.lags == [Lag("pg", "T", "broker-a", 0, 2, leased=True),
                        Lag("pg", "%RETRY%pg_T", "broker-a", 0, 1, leased=True)]
    assert got.lags[0].to_dict()["leased"] is True and "leased" not in Lag("pg", "T", "b", 0, 1).to_dict()
    assert backlog_of([pg], {"broker-a": {**leased, "pop": {"in_flight": []}}}, {}).empty


class FakeClock:
    def __init__(self) -> None:
        self.ms = 1000.0

    def now(self) -> float:
        return self.ms

    def sleep(self, ms: float) -> None:
        self.ms += ms


def _behind(n: int) -> Backlog:
    return Backlog([Lag("cg", "T", "broker-a", 0, n)] if n else [])


def test_wait_ends_as_soon_as_nothing_is_left() -> None:
    clock, left = FakeClock(), iter([3, 2, 0])
    got = wait_drained(lambda _ms: _behind(next(left)), clock.now, clock.sleep, timeout_ms=300, poll_ms=50)
    assert got.completed and got.waited_ms == 100 and not got.interrupted
    line = got.event()
    assert line["completed"] is True and line["lag_total"] == 0 and line["lag_left"] == []
    assert events.problems({"ts": 1.0, **line}) == []  # the registry accepts what the launcher writes


def test_wait_gives_up_at_the_bound_and_says_what_is_left() -> None:
    clock = FakeClock()
    looks: list[float] = []

    def probe(left_ms: float) -> Backlog:
        looks.append(left_ms)
        return Backlog([Lag("cg", "T", "broker-a", 0, 4), Lag("cg", "T", "broker-b", 1, 7, None)], ["broker-c"])

    got = wait_drained(probe, clock.now, clock.sleep, timeout_ms=120, poll_ms=50)
    assert not got.completed and got.waited_ms == 120
    assert looks == [120, 70, 20, 0]  # the last sleep is cut to the bound; one look at the bound
    line = got.event()
    assert line["lag_total"] == 11 and line["unreadable"] == ["broker-c"]
    assert [r["broker"] for r in line["lag_left"]] == ["broker-b", "broker-a"]  # largest first
    assert events.problems({"ts": 1.0, **line}) == []


def test_a_zero_bound_looks_once_and_an_interrupt_ends_the_wait_with_the_last_look() -> None:
    clock = FakeClock()
    got = wait_drained(lambda _ms: _behind(2), clock.now, clock.sleep, timeout_ms=0, poll_ms=50)
    assert not got.completed and got.waited_ms == 0 and got.backlog.lags[0].lag == 2

    def interrupting_sleep(_ms: float) -> None:
        raise KeyboardInterrupt

    got = wait_drained(lambda _ms: _behind(5), clock.now, interrupting_sleep, timeout_ms=1000, poll_ms=50)
    assert got.interrupted and not got.completed and got.event()["interrupted"] is True
    assert got.event()["lag_total"] == 5

    looks = iter([KeyboardInterrupt, 4])  # the signal hits the first look: one more says what is left

    def probe(_ms: float) -> Backlog:
        n = next(looks)
        if n is KeyboardInterrupt:
            raise KeyboardInterrupt
        return _behind(n)

    got = wait_drained(probe, clock.now, clock.sleep, timeout_ms=1000, poll_ms=50)
    assert got.interrupted and got.event()["lag_total"] == 4
