"""The DLedger failover section's core (reports.core.failover*) on the hand-made runs of
tests/core/failover_runs.py: a kill, a pause and a partition of a group's leader, each number
worked out in the scenario's docstring; the same numbers whatever text the user's names are, and
whichever nodes a share of the run holds; nothing for a run without a DLedger group."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rmqemu.reports.core.analysis import (
    NODE_COLUMNS,
    NODE_KINDS,
    TRUTH_COLUMNS,
    analyse,
    combine,
    concat,
    node_part,
    run_truth,
)
from rmqemu.reports.core.frame import RunInfo, events
from rmqemu.reports.results import rows
from tests import strategies
from tests.core.analysed import analysed
from tests.core.failover_runs import Names, Run, kill_run, partition_run, pause_run

QUERIES = ("m.failover_groups", "m.failover_faults", "m.failover_failovers", "m.failover_views", "m.failover_rto",
           "m.failover_stale_sends", "m.failover_lost")



def one(t: dict[str, pd.DataFrame], name: str) -> dict[str, Any]:
    [row] = rows(t[name])
    return row


def pick(row: dict[str, Any], *cols: str) -> tuple[Any, ...]:
    return tuple(row[c] for c in cols)


def views(t: dict[str, pd.DataFrame]) -> list[tuple[Any, ...]]:
    return [pick(r, "who", "node", "by", "seen_offset_ms", "stale_ms") for r in rows(t["m.failover_views"])]


def test_a_killed_leader() -> None:
    t = analysed(kill_run())
    f = one(t, "m.failover_failovers")
    assert pick(f, "group", "term", "leader", "node", "old_term", "old_leader", "old_node", "fault_id", "fault",
                "hit") == ("broker-a", 2, "n1", "broker-a-n1", 1, "n0", "broker-a-n0", "f1", "kill", "leader")
    assert pick(f, "stopped_offset_ms", "elected_offset_ms", "master_offset_ms", "election_ms", "no_master_ms") == (
        999.0, 7300.0, 7400.0, 6301.0, 6401.0)
    assert pick(f, "namesrvs_stale_ms", "clients_stale_ms", "unseen_views", "stale_master_sends", "rto_ms",
                "producers_failed", "duplicates", "reconsumed") == (6396.0, 29001.0, 0, 3, 29000.0, 1, 0, 1)
    assert views(t) == [("namesrv", "namesrv-0", "ns.broker", 7390.0, 6391.0),
                        ("namesrv", "namesrv-1", "ns.route", 7395.0, 6396.0),
                        ("client", "cg-0", "client.route", 8000.0, 7001.0),
                        ("client", "pg-0", "client.route", 30000.0, 29001.0)]
    assert [pick(r, "got", "sends") for r in rows(t["m.failover_stale_sends"])] == [("refused", 3)]
    assert [pick(r, "producer", "failed_offset_ms", "recovered_offset_ms", "rto_ms")
            for r in rows(t["m.failover_rto"])] == [("pg-0", 1100.0, 30100.0, 29000.0)]
    assert rows(t["m.failover_lost"]) == [{"group": "broker-a", "consumer_group": "cg", "topic": "T", "msg_id": "m6"}]
    assert one(t, "m.failover_groups") == {
        "group": "broker-a", "peers": 3, "elections": 2, "failovers": 1, "max_term": 2, "no_master_ms": 6401.0,
        "max_no_master_ms": 6401.0, "stale_master_sends": 3, "acked_lost": 1, "duplicates": 0, "reconsumed": 1,
        "truncated": 0}
    assert rows(t["m.failover_faults"]) == [{"group": "broker-a", "fault_id": "f1", "fault": "kill",
                                             "start_offset_ms": 1000.0, "hit": "leader", "failovers": 1}]
    # the loss is the consumption section's own: the same message, counted there too
    assert t["m.group_loss"]["lost"].tolist() == [1]


def test_a_paused_leader_and_a_paused_follower() -> None:
    t = analysed(pause_run())
    f = one(t, "m.failover_failovers")
    assert pick(f, "fault_id", "hit", "stopped_offset_ms", "election_ms", "no_master_ms", "unseen_views",
                "rto_ms") == ("f1", "leader", 1000.0, 6300.0, 6400.0, 2, 21100.0)
    assert views(t) == [("namesrv", "namesrv-0", "ns.broker", 7390.0, 6390.0),
                        ("namesrv", "namesrv-1", None, None, 39000.0),
                        ("client", "cg-0", None, None, 39000.0),
                        ("client", "pg-0", "client.route", 25000.0, 24000.0)]
    assert [pick(r, "got", "sends") for r in rows(t["m.failover_stale_sends"])] == [
        ("not_available", 1), ("system_error", 1), ("timeout", 1)]
    assert [pick(r, "fault_id", "hit", "failovers") for r in rows(t["m.failover_faults"])] == [
        ("f1", "leader", 1), ("f2", "follower", 0)]
    assert rows(t["m.failover_lost"]) == []


def test_a_leader_cut_off_from_its_peers() -> None:
    t = analysed(partition_run())
    f = one(t, "m.failover_failovers")
    assert pick(f, "fault", "hit", "stopped_offset_ms", "no_master_ms", "namesrvs_stale_ms", "clients_stale_ms",
                "stale_master_sends", "rto_ms", "duplicates", "reconsumed") == (
        "partition", "leader", 1000.0, 6400.0, 6390.0, 39000.0, 2, 6200.0, 1, 0)
    assert [pick(r, "got", "sends") for r in rows(t["m.failover_stale_sends"])] == [
        ("not_available", 1), ("system_error", 1)]
    g = one(t, "m.failover_groups")
    assert pick(g, "duplicates", "reconsumed", "acked_lost", "truncated") == (1, 0, 0, 2)
    # the duplicate is the consumption section's too: m2 consumed twice by cg
    assert t["m.consumption"]["duplicate_messages"].sum() == 1


def test_a_leader_re_elected_in_a_new_term_and_an_election_without_a_fault() -> None:
    """n0 steps down at 1000 and is elected again in term 2 at 1500, master at 1600: sends to it
    from the step-down until then are stale (1200), later ones are not (1700). Then at 5000 n1 is
    elected in term 3 with no fault behind it: n0's leadership ended at 4900."""
    r = Run(Names())
    for p, a in (("n0", "a0"), ("n1", "a1")):
        r.add(0.0, f"broker-a-{p}", "node.start", role="broker", pid=1, addr=a)
    r.add(0.0, "broker-a-n0", "broker.topic", broker="broker-a", broker_id=0, topic="T", read_queues=4,
          write_queues=4, perm=6, how="admin")
    r.role(100.0, "n0", 1, "LEADER", "n0")
    r.role(1000.0, "n0", 1, "CANDIDATE", None)
    r.role(1500.0, "n0", 2, "LEADER", "n0")
    r.broker_role(1600.0, "n0", 2, True)
    for ts in (1200.0, 1700.0):
        r.send(ts, 2, None, "error", 1, addr="a0")
    r.role(4900.0, "n0", 2, "FOLLOWER", None)
    r.role(5000.0, "n1", 3, "LEADER", "n1")
    r.add(6000.0, "launcher", "run.stop")
    t = analysed(r.lines)
    got = [pick(f, "term", "old_node", "node", "fault_id", "stopped_offset_ms", "stale_master_sends")
           for f in rows(t["m.failover_failovers"])]
    assert got == [(2, "broker-a-n0", "broker-a-n0", None, 1000.0, 1),
                   (3, "broker-a-n0", "broker-a-n1", None, 4900.0, 0)]
    # the misrouting reason: n0's broker was the master from 1600 to its stop at 4900
    assert t["classified"][["target", "reason"]].values.tolist() == [["broker-a-n0", "stale_master"],
                                                                    ["broker-a-n0", None]]


def test_a_run_without_a_dledger_group_has_an_empty_section() -> None:
    lines = [x for x in kill_run() if x["kind"] not in ("dledger.role", "dledger.truncate", "broker.role")]
    t = analysed(lines)
    assert {q: len(t[q]) for q in QUERIES} == dict.fromkeys(QUERIES, 0)
    assert all(len(t[p]) == 0 for p in ("p.failover_roles", "p.failover_masters", "p.failover_views"))


def test_shares_of_whole_nodes_give_the_whole_runs_section() -> None:
    """Step 2 node by node, as the Spark engine runs a large run, then step 3: the same rows."""
    ev = events(partition_run())
    info = RunInfo.of(ev, 1.0)
    truth = run_truth(ev[list(TRUTH_COLUMNS)], info, {})
    mine = ev.loc[ev["kind"].isin(NODE_KINDS) & ev["node"].notna(), list(NODE_COLUMNS)]
    parts = [node_part(mine[(mine["node"] == n).to_numpy(bool)], truth, info) for n in mine["node"].unique()]
    split, whole = combine(concat(parts), truth, info), analyse(ev, info, {})
    for q in QUERIES:
        assert rows(split[q]) == rows(whole[q]), q


def test_the_plot_tables_draw_roles_masters_views_and_elections() -> None:
    t = analysed(kill_run())
    roles = t["p.failover_roles"]
    n0 = roles[roles["lane"] == "n0 (broker-a-n0)"]
    assert list(n0[["role", "start_s", "end_s"]].itertuples(index=False, name=None)) == [("LEADER", 0.1, 0.999)]
    m = t["p.failover_masters"]
    assert list(m[["lane", "start_s"]].itertuples(index=False, name=None)) == [
        ("n0 (broker-a-n0)", 0.11), ("n1 (broker-a-n1)", 7.4)]
    v = t["p.failover_views"]
    assert list(v[["lane", "kind", "start_s", "end_s"]].itertuples(index=False, name=None)) == [
        ("namesrv-0", "namesrv", 0.999, 7.39), ("namesrv-1", "namesrv", 0.999, 7.395), ("cg-0", "client", 0.999, 8.0),
        ("pg-0", "client", 0.999, 30.0)]
    assert t["p.failover_elections"]["label"].tolist() == ["term 2: n1"]


def _without_names(t: dict[str, pd.DataFrame], n: Names) -> dict[str, list[dict[str, Any]]]:
    """The section's rows with the user's names, in the columns that hold them, as placeholders."""
    swap = {"group": {n.group: "<G>"}, "topic": {n.topic: "<T>"}, "consumer_group": {n.consumer_group: "<CG>"},
            "msg_id": {m: f"<{i}>" for i, m in enumerate(n.ids)}}
    return {q: [{k: swap.get(k, {}).get(v, v) for k, v in r.items()} for r in rows(t[q])] for q in QUERIES}


@functools.cache
def _plain(make: Any) -> dict[str, list[dict[str, Any]]]:
    return _without_names(analysed(make()), Names())


@pytest.mark.parametrize("make", [kill_run, pause_run, partition_run], ids=["kill", "pause", "partition"])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=strategies.text(1, 12), topic=strategies.text(1, 12), cg=strategies.text(1, 12),
       ids=st.lists(strategies.text(1, 12), min_size=6, max_size=6, unique=True))
def test_any_unicode_in_group_topic_and_message_ids_gives_the_same_section(
        make: Any, group: str, topic: str, cg: str, ids: list[str]) -> None:
    names = Names(group, topic, cg, tuple(ids))
    assume(group != "broker-b")  # the partition run's other broker
    assume(not topic.startswith(("%RETRY%", "%DLQ%")))
    assert _without_names(analysed(make(names)), names) == _plain(make), make.__name__


def test_lost_ids_are_the_group_loss_counts() -> None:
    """Fates.lost names exactly the messages group_loss counts as lost."""
    from rmqemu.reports.core.consumers import subscriptions
    from rmqemu.reports.core.settle import Fates

    t = analysed(kill_run())
    lines = t["consumer_lines"]
    fates = Fates(lines, t["classified"], t["retry_lines"], t["lives"], 40_000.0)
    assert subscriptions(lines).values.tolist() == [["cg", "T"]]
    assert list(fates.lost("cg", "T")) == ["m6"] and fates.per_group("cg", "T")["lost"] == 1
    assert np.asarray(fates.lost("nobody", "T")).tolist() == ["m1", "m5", "m6"]


def test_a_client_that_first_fetched_the_route_after_the_failover_began_was_never_stale() -> None:
    """A client whose first route of the group came after the old leader stopped never held the
    old master: it is no view of that failover (it would add the whole failover as staleness)."""
    lines = kill_run()
    late = {**next(e for e in lines if e["kind"] == "client.route" and e["node"] == "cg-0"), "node": "cg-late",
            "ts": 20000.0}
    t = analysed([*lines, late])
    assert "cg-late" not in {r["node"] for r in rows(t["m.failover_views"])}
    assert views(t) == views(analysed(kill_run()))
