"""The transactions section's core (reports.core.transactions*) on the hand-made run of
tests/core/tx_runs.py, each number worked out in its docstring: each message's fate, the totals,
the checks, the committed messages per consumer group and per fault; the loss metrics reading a
half as a message only once committed; the same numbers whatever text the user's names are and
whichever nodes a share of the run holds; nothing for a run without a transaction."""
from __future__ import annotations

import functools
from typing import Any

import pandas as pd
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rmqemu import metric_transactions
from rmqemu.reports.core import transactions
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
from tests.core.tx_runs import Names, tx_run

QUERIES = ("m.tx_totals", "m.tx_checks", "m.tx_groups", "m.tx_faults")



@functools.cache
def plain() -> dict[str, pd.DataFrame]:
    return analysed(tx_run())


def test_each_message_has_one_fate_its_deciding_end_and_its_checks() -> None:
    m = plain()["tx_messages"].set_index("msg_id")
    cols = ["fate", "after_check", "checks", "commits", "cause", "halves", "sent", "broker"]
    got = {i: tuple(None if pd.isna(v) else v for v in r)
           for i, r in zip(m.index, m[cols].itertuples(index=False), strict=True)}
    assert got == {
        "t1": ("committed", False, 0, 1, None, 1, True, "broker-a"),
        "t2": ("rolled_back", False, 0, 0, None, 1, True, "broker-a"),
        "t3": ("committed", False, 0, 2, "first_hand_and_check", 1, True, "broker-a"),
        "t4": ("rolled_back", False, 0, 0, None, 1, True, "broker-a"),
        "t5": ("open", False, 1, 0, None, 1, True, "broker-a"),  # its not_found end is no end
        "t6": ("discarded", False, 2, 0, None, 1, True, "broker-a"),
        "t7": ("committed", True, 2, 1, None, 1, False, "broker-a"),  # the send timed out: stored all the same
        "t8": ("rolled_back", True, 1, 0, None, 1, True, "broker-a"),
        "t9": ("committed", True, 1, 2, "checks_only", 2, True, "broker-b"),  # the first commit's broker
    }
    assert m["visible_ms"].dropna().to_dict() == {"t1": 10.0, "t3": 20.0, "t7": 1310.0, "t9": 1005.0}
    assert (m.loc["t5", "life_end"], m.loc["t6", "decided_at"], m.loc["t9", "life_end"]) == (5100.0, 3300.0, 3465.0)
    assert m.loc["t6", "discard_reason"] == "max_checks"


def test_the_totals() -> None:
    [x] = rows(plain()["m.tx_totals"])
    assert x == {
        "sent": 8, "stored": 9, "stored_again": 1,
        "committed": 4, "committed_delivered": 4, "rolled_back": 3, "rolled_back_delivered": 1,
        "discarded": 1, "discarded_delivered": 0, "open": 1, "open_delivered": 0,
        "committed_first_hand": 2, "committed_after_check": 2, "rolled_back_first_hand": 2,
        "rolled_back_after_check": 1, "discarded_max_checks": 1, "discarded_expired": 0,
        "committed_lost_per_group": 1, "committed_gone_per_group": 0,
        "stored_twice": 2, "delivered_twice": 2, "cause_first_hand_and_check": 1, "cause_checks_only": 1,
        "cause_first_hand_only": 0, "checks": 9, "checks_no_channel": 3, "checked_messages": 6,
        # 10, 20, 1005, 1310 ms
        "visible_n": 4, "visible_p50_ms": 512.5, "visible_p90_ms": 1218.5, "visible_p99_ms": 1300.85,
        "visible_max_ms": 1310.0, "visible_mean_ms": 586.25}


def test_the_checks_per_decision_the_groups_and_the_faults() -> None:
    t = plain()
    assert rows(t["m.tx_checks"]) == [{"checks": 1, "committed": 1, "rolled_back": 1},
                                      {"checks": 2, "committed": 1, "rolled_back": 0}]
    zero = {"dead_lettered": 0, "retrying": 0, "delayed": 0, "gone": 0}
    assert rows(t["m.tx_groups"]) == [
        {"group": "cg-1", "topic": "T", "committed": 4, "consumed": 4, **zero, "lost": 0},
        {"group": "cg-2", "topic": "T", "committed": 4, "consumed": 3, **zero, "lost": 1}]  # t7
    f2, f1 = rows(t["m.tx_faults"])
    assert f2 == {"fault_id": "f2", "fault": "pause", "start_offset_ms": 790.0, "impact_end_offset_ms": 850.0,
                  "messages": 2, "committed": 1, "rolled_back": 1, "after_check": 0, "discarded": 0, "open": 0,
                  "stored_twice": 1, "rolled_back_delivered": 1, "checks": 0, "checks_no_channel": 0}
    assert f1 == {"fault_id": "f1", "fault": "clock", "start_offset_ms": 2000.0, "impact_end_offset_ms": 3000.0,
                  "messages": 5, "committed": 2, "rolled_back": 1, "after_check": 3, "discarded": 1, "open": 1,
                  "stored_twice": 1, "rolled_back_delivered": 0, "checks": 8, "checks_no_channel": 3}


def test_the_loss_metrics_read_a_half_as_a_message_only_once_committed() -> None:
    """Acked: m1, and of the halves sent ok the committed t1, t3, t9; t2, t5, t6, t8 are no loss.
    t4 (rolled back) and t7 (its send timed out) were consumed unacked."""
    t = plain()
    [c] = rows(t["m.consumption"])
    assert (c["acked"], c["consumed"], c["lost"], c["consumed_unacked"], c["duplicate_messages"]) == (4, 6, 0, 2, 2)
    assert [(g["group"], g["expected"], g["consumed"], g["lost"]) for g in rows(t["m.group_loss"])] == [
        ("cg-1", 4, 4, 0), ("cg-2", 4, 4, 0)]
    # the same lines without the half marks: every ok send is an ack, and the halves never committed are lost
    bare = analysed([{k: v for k, v in x.items() if k != "transaction"} for x in tx_run()])
    [b] = rows(bare["m.consumption"])
    assert (b["acked"], b["lost"], b["consumed_unacked"]) == (9, 4, 1)  # t2, t4, t5, t6, t8 acked; t7 unacked
    assert rows(t["m.outcomes"]) == rows(bare["m.outcomes"])  # the sends section counts attempts either way


def test_acks_leave_ordinary_and_committed_sends_alone() -> None:
    t = plain()
    sends = t["classified"]
    got = transactions.acks(sends, t["tx_lines"])
    changed = sends.loc[got["outcome"].ne(sends["outcome"]).to_numpy(bool), "msg_id"].tolist()
    assert changed == ["t2", "t4", "t5", "t6", "t8"] and set(got["outcome"]) == {"ok", "timeout", "uncommitted"}
    bare = sends.drop(columns="transaction")  # a table from before halves: nothing to read
    assert transactions.acks(bare, t["tx_lines"]) is bare


def test_a_run_without_transactions_has_zeros_and_a_row_per_fault() -> None:
    lines = [x for x in tx_run() if not x["kind"].startswith("tx.") and "transaction" not in x]
    t = analysed(lines)
    [x] = rows(t["m.tx_totals"])
    assert {k: v for k, v in x.items() if not k.startswith("visible_")} == dict.fromkeys(
        [k for k in x if not k.startswith("visible_")], 0)
    assert x["visible_n"] == 0 and x["visible_p50_ms"] is None
    assert rows(t["m.tx_checks"]) == rows(t["m.tx_groups"]) == [] and t["tx_messages"].empty
    assert [(f["fault_id"], f["messages"]) for f in rows(t["m.tx_faults"])] == [("f2", 0), ("f1", 0)]


def test_the_registry_names_the_reports_causes_and_reasons() -> None:
    assert metric_transactions.CAUSES == transactions.CAUSES
    assert metric_transactions.DISCARD_REASONS == transactions.DISCARD_REASONS


def test_a_share_of_the_nodes_gives_what_the_whole_run_gives() -> None:
    ev = events(tx_run())
    info = RunInfo.of(ev, 1.0)
    truth = run_truth(ev[list(TRUTH_COLUMNS)], info, {})
    mine = ev.loc[ev["kind"].isin(NODE_KINDS) & ev["node"].notna(), list(NODE_COLUMNS)]
    parts = [node_part(mine[(mine["node"] == n).to_numpy(bool)], truth, info) for n in mine["node"].unique()]
    split, whole = combine(concat(parts), truth, info), analyse(ev, info, {})
    for q in (*QUERIES, "m.consumption", "m.group_loss", "tx_messages"):
        assert rows(split[q]) == rows(whole[q]), q


def _without_names(t: dict[str, pd.DataFrame], n: Names) -> dict[str, list[dict[str, Any]]]:
    """The section's rows, its messages and the consumption's, with the user's names as placeholders."""
    swap = {"group": {g: f"<G{i}>" for i, g in enumerate(n.groups)} | {n.producer_group: "<PG>"},
            "topic": {n.topic: "<T>"}, "msg_id": {m: f"<{i}>" for i, m in enumerate(n.ids)}}
    return {q: sorted(([{k: swap.get(k, {}).get(v, v) for k, v in r.items()} for r in rows(t[q])]), key=repr)
            for q in (*QUERIES, "m.consumption", "m.group_loss", "tx_messages")}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(pg="pg", topic="T", groups=["cg-1", "cg-2"], ids=["0", "1", "\x00p", "3", "4", "5", "6", "7", "\x00", "00"])
@given(pg=strategies.text(1, 12), topic=strategies.text(1, 12),
       groups=st.lists(strategies.text(1, 12), min_size=2, max_size=2, unique=True),
       ids=st.lists(strategies.text(1, 12), min_size=10, max_size=10, unique=True))
def test_any_unicode_in_ids_topics_and_groups_gives_the_same_section(pg: str, topic: str, groups: list[str],
                                                                     ids: list[str]) -> None:
    assume(not topic.startswith(("%RETRY%", "%DLQ%")) and pg not in groups)  # a group column holds both
    # group names that differ only after a NUL are one group to the consumption tables (pandas hashes
    # names as C strings there); message ids are not (see the example)
    assume(groups[0].split("\x00")[0] != groups[1].split("\x00")[0])
    names = Names(pg, topic, (groups[0], groups[1]), tuple(ids))
    default = Names()
    want = _without_names(plain(), default)
    got = _without_names(analysed(tx_run(names)), names)
    assert got == want


def test_an_end_naming_a_check_copy_answers_the_check_though_its_flag_says_not() -> None:
    """The C++ client writes ``fromTransactionCheck`` as "1", which 4.9.4 reads as false: its answer
    to a check is told by the copy it names (broker, half-queue offset, message), not by the flag."""
    lines = tx_run()
    for line in lines:
        if line["kind"] == "tx.end":
            line["from_check"] = False
    m = analysed(lines)["tx_messages"].set_index("msg_id")
    assert m.loc[["t7", "t8", "t9"], "after_check"].tolist() == [True, True, True]
    assert m.loc[["t1", "t2", "t4"], "after_check"].tolist() == [False, False, False]
    assert m.loc["t7", "checks"] == 2 and m.loc["t3", "cause"] == "first_hand_and_check"
