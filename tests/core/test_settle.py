"""What became of the acked messages a group never consumed: dead-lettered, retrying, gone with
the group's consumers, or lost (reports.core.settle, docs/design.md §7 "Consumption")."""
from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.reports.core import consumers, settle
from rmqemu.reports.core import sends as sends_mod
from rmqemu.reports.core.frame import events
from rmqemu.reports.core.retries import retry_lines
from rmqemu.reports.core.truth import lives
from tests.reports.test_consumption import consumption_events

T, U, EMU, REAL = "T", "U", "cg-emu", "cg-real"
STOP, END = 3000.0, 4000.0


def ev(ts: float, node: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": kind, **fields}


def consume(ts: float, group: str, msg_ids: list[str], topic: str = T, failed: list[str] | None = None) -> dict:
    line = ev(ts, f"{group}-0", "consume", group=group, topic=topic, broker="broker-a", queue_id=0, msg_ids=msg_ids)
    return {**line, "reconsume_later": failed} if failed else line


def member(ts: float, broker: str, group: str, change: str, remaining: int) -> dict[str, Any]:
    return ev(ts, broker, "broker.consumer", group=group, client="client@9", client_id="c@9", change=change,
              remaining=remaining, real=True)


def back(ts: float, msg: str, outcome: str) -> dict[str, Any]:
    return ev(ts, "broker-a-0", "retry.back", group=EMU, topic=T, msg_id=msg, origin_msg_id=None, reconsume_times=1,
              max_reconsume_times=1, outcome=outcome, level=3 if outcome == "retry" else None, via="send_back",
              client=f"{EMU}-0", offset_msg_id=f"o-{msg}")


def send(ts: float, msg: str, topic: str = T) -> dict[str, Any]:
    return ev(ts, "pg-1-0", "send", msg_id=msg, topic=topic, broker="broker-a", queue_id=0, attempt=1, outcome="ok",
              code=0, latency_ms=1.0)


def run() -> pd.DataFrame:
    """T is subscribed by an emulated group still consuming at the end and by a real client's group
    that left; U by the real client's group only. The emulated group consumed m1, m2 (m2 from its
    retry topic after failing it), gave m3 up to the DLQ, was still retrying m4, never had m5, m6;
    the real client's group had m1, m2 and u1 before its consumer left broker-a (unregister) and
    broker-b died. m8 was sent with a delay level and had not reached T by run.stop. m7 was acked
    after run.stop; a fallback send to %RETRY% is a retry."""
    return events([
        *[ev(0, n, "node.start", role="broker") for n in ("broker-a-0", "broker-b-0")],
        *[send(100 + i, f"m{i}") for i in range(1, 7)], send(107, "u1", U), send(108, "u2", U), send(109, "m8"),
        send(3500, "m7"), send(300, "r1", f"%RETRY%{EMU}"),
        ev(150, f"{EMU}-0", "rebalance", group=EMU, topic=T, cid="e@1", cids=["e@1"], strategy="AVG", allocated=[]),
        consume(200, EMU, ["m1"], failed=["m2", "m3", "m4"]), back(210, "m2", "retry"), back(211, "m3", "dlq"),
        back(212, "m4", "retry"), consume(400, EMU, ["m2"], f"%RETRY%{EMU}"),
        consume(220, REAL, ["m1", "m2"]), consume(230, REAL, ["u1"], U),
        member(50, "broker-a-0", REAL, "joined", 1), member(50, "broker-b-0", REAL, "joined", 1),
        member(51, "broker-a-0", EMU, "joined", 1), member(52, "broker-a-0", "cg-idle", "joined", 1),
        member(2000, "broker-a-0", REAL, "left", 0), ev(2100, "broker-b-0", "node.exit", code=-9),
        member(3600, "broker-a-0", EMU, "left", 0),  # the shutdown, after run.stop
    ])


@pytest.fixture(scope="module")
def fates() -> settle.Fates:
    log = run()
    return settle.Fates(log, sends_mod.sends(log), retry_lines(log), lives(log, END), STOP, pd.Series(["m8"]))


def test_a_group_is_gone_when_it_left_and_no_live_broker_lists_a_consumer_of_it() -> None:
    log = run()
    assert settle.gone_groups(log, lives(log, END), STOP) == {REAL}
    assert settle.gone_groups(log, lives(log, END), 1000.0) == set()  # before it left
    assert settle.gone_groups(log, lives(log, END), 3700.0) == {REAL, EMU}  # the shutdown: all gone
    # broker-b alive (no exit): its line still lists the real client's consumer
    alive = log.loc[log["kind"] != "node.exit"]
    assert settle.gone_groups(alive, lives(alive, END), STOP) == set()
    # without run.stop the shutdown, where every consumer leaves, cannot be told apart: none is gone
    no_stop = settle.Fates(log, sends_mod.sends(log), retry_lines(log), lives(log, END), None)
    assert no_stop.gone == set() and no_stop.per_group(REAL, U)["lost"] == 1


def test_per_group_the_fates_of_what_it_never_consumed(fates: settle.Fates) -> None:
    assert fates.per_group(EMU, T) == {"consumed": 2, "dead_lettered": 1, "retrying": 1, "delayed": 1, "gone": 0,
                                       "lost": 2}
    assert fates.per_group(REAL, T) == {"consumed": 2, "dead_lettered": 0, "retrying": 0, "delayed": 1, "gone": 4,
                                        "lost": 0}
    assert fates.per_group(REAL, U) == {"consumed": 1, "dead_lettered": 0, "retrying": 0, "delayed": 0, "gone": 1,
                                        "lost": 0}


def test_per_topic_the_fates_of_what_no_group_consumed(fates: settle.Fates) -> None:
    # m3: dead-lettered by the emulated group, m4 retried by it, m8 delayed, m5 and m6 lost: that group
    # still consumes
    assert fates.per_topic(T) == {"dead_lettered": 1, "retrying": 1, "delayed": 1, "gone": 0, "lost": 2}
    assert fates.per_topic(U) == {"dead_lettered": 0, "retrying": 0, "delayed": 0, "gone": 1, "lost": 0}


def test_the_tables_drop_broker_made_topics_and_split_lost(fates: settle.Fates) -> None:
    log = run()
    m = consumers.Messages(log, sends_mod.sends(log), STOP)
    by_topic = settle.consumption(consumers.consumption(m), fates).set_index("topic")
    assert list(by_topic.index) == [T, U]  # no %RETRY% row: neither its consumption nor its fallback send
    cols = ["consumed", "consumed_unacked", "lost", "gone", "dead_lettered", "retrying", "delayed"]
    assert by_topic[cols].values.tolist() == [[2, 0, 2, 0, 1, 1, 1], [1, 0, 0, 1, 0, 0, 0]]
    groups = settle.group_loss(consumers.group_loss(m), fates)
    cols = ["group", "topic", "expected", "consumed", "lost", "gone", "dead_lettered", "retrying", "delayed"]
    assert groups[cols].values.tolist() == [
        [EMU, T, 7, 2, 2, 0, 1, 1, 1], [REAL, T, 7, 2, 0, 4, 0, 0, 1], [REAL, U, 2, 1, 0, 1, 0, 0, 0]]


def test_without_retries_or_membership_lines_lost_is_what_it_always_was() -> None:
    log = events(consumption_events())
    sends = sends_mod.sends(log)
    raw = consumers.consumption(consumers.Messages(log, sends))
    fates = settle.Fates(log, sends, retry_lines(log), lives(log, None), None)
    got = settle.consumption(raw, fates)
    assert got["lost"].tolist() == raw["lost"].tolist() == [1, 0]
    assert (got[["gone", "dead_lettered", "retrying", "delayed"]] == 0).all().all()


PLANS = ("consumed", "dead_lettered", "retrying", "delayed", "unseen")
_names = st.text(min_size=1, max_size=12).filter(lambda t: not t.startswith(("%RETRY%", "%DLQ%")))


@settings(max_examples=40, deadline=None)
@given(plans=st.dictionaries(st.text(min_size=1, max_size=12), st.sampled_from(PLANS), min_size=1, max_size=8),
       group=_names, topic=_names, left=st.booleans())
def test_any_ids_and_names_get_each_message_exactly_one_fate(plans: dict[str, str], group: str, topic: str,
                                                            left: bool) -> None:
    """Message ids, group and topic names are user data (any Unicode): every acked message of the
    group's topic is consumed or has exactly the fate its lines give it."""
    lines = [member(1, "broker-a-0", group, "joined", 1)]
    lines += [member(2, "broker-a-0", group, "left", 0)] if left else []
    for i, (msg, plan) in enumerate(plans.items()):
        lines.append(send(10 + i, msg, topic))
        if plan == "consumed":
            lines.append(consume(100 + i, group, [msg], topic))
        elif plan in ("dead_lettered", "retrying"):
            lines += [consume(100 + i, group, [], topic, failed=[msg]),
                      {**back(101 + i, msg, "dlq" if plan == "dead_lettered" else "retry"), "group": group,
                       "topic": topic}]
    lines.append(ev(5, f"{group}-0", "rebalance", group=group, topic=topic, cid="c", cids=["c"], strategy="AVG",
                    allocated=[]))
    log = events(lines)
    delayed = pd.Series([m for m, p in plans.items() if p == "delayed"], dtype=object)
    fates = settle.Fates(log, sends_mod.sends(log), retry_lines(log), lives(log, END), STOP, delayed)
    count = {p: sum(v == p for v in plans.values()) for p in PLANS}
    want = {"consumed": count["consumed"], "dead_lettered": count["dead_lettered"], "retrying": count["retrying"],
            "delayed": count["delayed"], "gone": count["unseen"] if left else 0, "lost": 0 if left else count["unseen"]}
    assert fates.per_group(group, topic) == want
    assert fates.per_topic(topic) == {k: v for k, v in want.items() if k != "consumed"}


def test_ids_that_differ_only_after_a_nul_are_two_messages() -> None:
    """pandas hashes a column of strings as C strings ("\x00" and "\x00p" would be one key); an id is
    user data (docs/design.md §6), so each of these is a message of its own."""
    lines = [send(10, "\x00"), send(11, "\x00p"), send(12, "p"), consume(100, EMU, ["\x00p"]),
             ev(5, f"{EMU}-0", "rebalance", group=EMU, topic=T, cid="c", cids=["c"], strategy="AVG", allocated=[])]
    log = events(lines)
    fates = settle.Fates(log, sends_mod.sends(log), retry_lines(log), lives(log, END), STOP)
    assert fates.per_group(EMU, T) == {"consumed": 1, "dead_lettered": 0, "retrying": 0, "delayed": 0, "gone": 0,
                                       "lost": 2}
    assert sorted(fates.lost(EMU, T)) == ["\x00", "p"]
