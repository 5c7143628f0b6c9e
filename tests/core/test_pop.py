"""The RocketMQ 5 layer's core (reports.core.pop*, timers, the staleness holders, a gRPC send's link)
on the hand-made run of tests/core/pop_runs.py, each number worked out in its docstring; the FIFO
rule against a plain restatement of it on any sequence of leases and acks (hypothesis); the same
numbers whichever nodes a share holds; zeros for a run without the layer."""
from __future__ import annotations

import functools
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.reports.core import pop, staleness, timers
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
from rmqemu.reports.core.rmq5_run import POP_QUERIES, TIMER_QUERIES
from rmqemu.reports.results import rows
from tests.core.analysed import analysed
from tests.core.pop_runs import pop_run


def tuples(df: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in rows(df)]


@functools.cache
def plain() -> dict[str, pd.DataFrame]:
    return analysed(pop_run())


def test_the_pop_totals() -> None:
    x = plain()["m.pop_totals"].iloc[0].to_dict()
    assert {k: x[k] for k in ("leases", "leases_fifo", "leases_retry", "leases_expired", "leases_redelivered",
                              "messages", "messages_redelivered", "messages_acked", "messages_unacked")} == {
        "leases": 14, "leases_fifo": 7, "leases_retry": 4, "leases_expired": 4, "leases_redelivered": 4,
        "messages": 10, "messages_redelivered": 2, "messages_acked": 9, "messages_unacked": 1}  # m3 went to the DLQ
    assert (x["attempts_once"], x["attempts_twice"], x["attempts_three_or_more"], x["attempts_max"]) == (8, 1, 1, 4)
    assert (x["proxy_acks"], x["proxy_ack_ok"], x["proxy_ack_expired"], x["proxy_ack_invalid"],
            x["proxy_ack_refused"]) == (12, 9, 1, 1, 1)
    assert (x["broker_acks"], x["broker_ack_ok"], x["broker_ack_not_out"], x["broker_ack_other"]) == (10, 9, 1, 0)
    assert (x["dlq_sent"], x["dlq_failed"]) == (1, 0)


def test_the_fifo_violations_and_groups() -> None:
    v = pop.fifo_violations(pop.pop_lines(events(pop_run())))
    assert [(r.message_group, r.msg_id, r.violation, r.ts, r.earlier) for r in v.itertuples()] == [
        ("g1", "f3", "unacked_previous", 330.0, "f2"),
        ("g2", "h2", "out_of_order", 400.0, "h1"), ("g2", "h2", "unacked_previous", 400.0, "h1")]
    assert tuples(plain()["m.pop_fifo"]) == [("GF", 3, 7, 1, 2)]  # k1, k2 in one pop: no violation


def test_each_fault_counts_the_lines_in_its_window() -> None:
    f = plain()["m.pop_faults"].iloc[0].to_dict()
    # the pause's window [1300, 1700): m2's revive, its refused late ack and its lease from the retry topic
    assert {k: f[k] for k in ("fault_id", "leases", "expired", "redelivered", "proxy_refused", "dlq")} == {
        "fault_id": "f1", "leases": 1, "expired": 1, "redelivered": 1, "proxy_refused": 1, "dlq": 0}


def test_a_timed_message_due_in_a_faults_window_and_never_delivered_is_late_there() -> None:
    f = plain()["m.faults"].set_index("fault_id").loc["f1"]
    assert f["late_deliveries"] == 1  # d2: due at 1610 (parked at 610, 1000 ms to wait), in the pause, still parked


def test_timed_messages_lateness_in_true_time_and_the_loss_metrics() -> None:
    t = plain()
    d = t["m.timers"].iloc[0].to_dict()
    assert {k: d[k] for k in ("topic", "sent", "parked", "delivered", "on_time", "late", "early", "pending",
                              "immediate")} == {"topic": "D", "sent": 3, "parked": 3, "delivered": 2, "on_time": 1,
                                                "late": 0, "early": 1, "pending": 1, "immediate": 1}
    assert (d["lateness_max_ms"], d["lateness_min_ms"]) == (10.0, -5000.0)  # d3: the clock went 5 s forward
    by = t["m.consumption"].set_index("topic")
    assert (by.loc["D", "delayed"], by.loc["D", "lost"]) == (1, 0)  # d2, still parked at run.stop
    assert (by.loc["T", "dead_lettered"], by.loc["T", "lost"]) == (1, 1)  # m3 to the DLQ; s1, sent in the pause


def test_a_proxy_and_a_grpc_client_hold_views_labelled() -> None:
    t = plain()
    got = [(r.client, r.holder, r.via, r.stale_ms) for r in t["m.clients"].itertuples()]
    assert got == [("client@1", "grpc", "proxy-0", 400.0), ("proxy-0", "proxy", None, 400.0)]
    assert tuples(t["m.misrouted"]) == [("paused", "ok", 1)]  # s1, the broker the proxy chose was paused
    assert t["m.faults"].iloc[0]["stale_views"] == 2


def test_a_grpc_send_is_cut_off_by_the_link_from_its_proxy() -> None:
    lines = [x for x in pop_run() if x["kind"] != "fault.start" and x["kind"] != "fault.end"]
    cut = {"fault_id": "f9", "fault": "partition", "targets": ["proxy-0", "broker-a-0"],
           "params": {"links": [["proxy-0", "broker-a-0"]]}}
    lines += [{"ts": 1300.0, "node": "injector", "kind": "fault.start", **cut},
              {"ts": 1700.0, "node": "injector", "kind": "fault.end", **cut, "reason": "scheduled"}]
    t = analysed(sorted(lines, key=lambda x: x["ts"]))
    assert tuples(t["m.misrouted"]) == [("partitioned", "ok", 1)]  # client@1 is no node: the proxy's link counts


def test_holders_without_a_manifest_know_a_proxy_by_its_view_line() -> None:
    ev = events([x for x in pop_run() if x["node"] in ("proxy-0", "client@1") and x["kind"] == "client.route"])
    nodes = pd.DataFrame({"node": pd.Series(dtype=object), "role": pd.Series(dtype=object)})
    got = staleness.holders(ev, nodes)
    assert tuples(got) == [("proxy-0", "proxy", None), ("client@1", "grpc", "proxy-0")]


def test_a_share_of_the_nodes_gives_what_the_whole_run_gives() -> None:
    ev = events(pop_run())
    info = RunInfo.of(ev, 1.0)
    truth = run_truth(ev[list(TRUTH_COLUMNS)], info, {})
    mine = ev.loc[ev["kind"].isin(NODE_KINDS) & ev["node"].notna(), list(NODE_COLUMNS)]
    parts = [node_part(mine[(mine["node"] == n).to_numpy(bool)], truth, info) for n in mine["node"].unique()]
    split, whole = combine(concat(parts), truth, info), analyse(ev, info, {})
    for q in (*POP_QUERIES, *TIMER_QUERIES, "m.consumption", "m.clients", "m.misrouted"):
        assert sorted(map(str, tuples(split[q]))) == sorted(map(str, tuples(whole[q]))), q


def test_a_run_without_the_layer_has_zeros_and_a_row_per_fault() -> None:
    t = analysed([x for x in pop_run() if x["kind"].split(".")[0] not in ("pop", "proxy", "timer")])
    x = t["m.pop_totals"].iloc[0]
    assert (x["leases"], x["proxy_acks"], x["fifo_messages"], x["attempts_max"]) == (0, 0, 0, 0)
    assert t["m.pop_fifo"].empty and len(t["m.pop_faults"]) == 1 and t["m.pop_faults"]["leases"].sum() == 0
    assert t["m.timer_totals"].iloc[0]["parked"] == 0 and t["m.timer_totals"].iloc[0]["sent"] == 3


# ---- the FIFO rule, against a plain restatement of it --------------------------------------------------------

def _reference(n: int, leases: list[tuple[int, int]], acks: dict[int, int]) -> set[tuple[int, str]]:
    """The rule of :func:`reports.core.pop.fifo_violations` restated: messages 0..n-1 sent in order;
    ``leases`` (message, pop) in delivery order at times 0, 1, ...; ``acks`` message -> ack time."""
    first = {}
    for i, (m, _) in enumerate(leases):
        first.setdefault(m, i)
    out = set()
    for m, at in first.items():
        if any(e < m and e in first and first[e] > at for e in range(n)):
            out.add((m, "out_of_order"))
    for i, (m, p) in enumerate(leases):
        prev = m - 1
        if prev < 0:
            continue
        same_pop = any(q == prev and pp == p for q, pp in leases[:i])
        if not acks.get(prev, 10**9) <= i and not same_pop:  # an ack at t is logged at t - 0.5
            out.add((m, "unacked_previous"))
    return out


@st.composite
def _fifo_case(draw: Any) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
    n = draw(st.integers(1, 6))
    leases = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3)), min_size=1, max_size=12))
    acks = draw(st.dictionaries(st.integers(0, n - 1), st.integers(0, 12)))
    return n, leases, acks


@settings(max_examples=60, deadline=None)  # sequences of up to 12 leases over 6 messages: 60 cover it
@given(_fifo_case())
def test_fifo_violations_follow_the_rule_on_any_sequence(case: tuple[int, list[tuple[int, int]], dict[int, int]]
                                                         ) -> None:
    n, leases, acks = case
    # ids and keys that differ only after a NUL (user data, docs/design.md §6): a second message
    # group, "g\0b", has twins of the messages sent in reverse, never leased, never compared
    lines: list[dict[str, Any]] = []
    for key, order in (("g\0a", range(n)), ("g\0b", range(n - 1, -1, -1))):
        lines += [{"ts": float(j) - 100, "node": "p", "kind": "send", "msg_id": f"m\0{key[-1]}{i}", "topic": "F",
                   "sharding_key": key, "outcome": "ok"} for j, i in enumerate(order)]
    lines += [{"ts": float(i), "node": "b", "kind": "pop.lease", "msg_id": f"m\0a{m}", "group": "G\0", "topic": "F",
               "fifo": True, "attempt": 1, "pop_time": p} for i, (m, p) in enumerate(leases)]
    lines += [{"ts": t - 0.5, "node": "b", "kind": "pop.ack", "msg_id": f"m\0a{m}", "group": "G\0", "topic": "F",
               "result": "ok"} for m, t in acks.items()]
    got = pop.fifo_violations(pop.pop_lines(events(sorted(lines, key=lambda x: x["ts"]))))
    assert {(int(r.msg_id[3:]), r.violation) for r in got.itertuples()} == _reference(n, leases, acks)
    assert set(got["message_group"]) <= {"g\0a"} and set(got["group"]) <= {"G\0"}


def test_the_route_lanes_say_who_holds_a_view() -> None:
    lanes = plain()["p.lanes"]
    held = lanes.loc[lanes["kind"] == "client", ["lane", "label"]].drop_duplicates()
    assert tuples(held.reset_index(drop=True)) == [("client@1", "gRPC via proxy-0"), ("proxy-0", "proxy")]


def test_timed_ids_that_differ_after_a_nul_are_sent_messages_of_their_own() -> None:
    """User data (docs/design.md §6): two timed sends "t\\0a" and "t\\0b" are two messages."""
    ev = events([{"ts": float(i), "node": "client@1", "kind": "send", "msg_id": m, "topic": "D", "broker": "broker-a",
                  "queue_id": 0, "attempt": 1, "outcome": "ok", "code": 0, "latency_ms": 1.0, "deliver_ms": 9e12}
                 for i, m in enumerate(["t\0a", "t\0b", "t\0a"])])
    lines = timers.timer_lines(ev)
    assert timers.by_topic(timers.entries(lines, 1.0), lines).set_index("topic").loc["D", "sent"] == 2
