"""Transactional messages on real processes with rmqemu's own producers (docs/rocketmq-model.md §9),
timing.scale 0.01, two masters (broker-a with a slave): every path a half can take.

- ``pg-tx`` commits, rolls back or leaves UNKNOWN its local transactions, and answers a check with
  a commit or a rollback: a first-hand commit is consumed, a first-hand rollback never is and is
  never checked, an UNKNOWN half is checked exactly once and then goes the way the answer says;
- ``pg-stuck`` answers UNKNOWN to everything: each half is checked ``transactionCheckMax`` times
  (3 here), then discarded, and never consumed.

The claims come from the events of every side: the producers' ``tx.local``, the masters' ``tx.half``,
``tx.end``, ``tx.check``, ``tx.discard``, and the consumer's ``consume``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from tests.eventdoc import contract_problems

BROKER = {"transactionCheckMax": 3, "transactionTimeOut": 30000}  # 300 wall ms: an end is never that late
TOPO: dict[str, Any] = {
    "name": "tx-paths", "seed": 41, "timing": {"scale": 0.01}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 1, **BROKER}, {"name": "broker-b", **BROKER}],
    "topics": [{"name": "TxTopic", "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "producers": [
        {"group": "pg-tx", "topics": ["TxTopic"], "rate": 0.3, "mode": "sync", "body": "mixed",
         "transaction": {"local": {"commit": 0.4, "rollback": 0.3, "unknown": 0.3},
                         "check": {"commit": 0.5, "rollback": 0.5}}},
        {"group": "pg-stuck", "topics": ["TxTopic"], "rate": 0.05, "mode": "sync",
         "transaction": {"local": {"unknown": 1}, "check": {"unknown": 1}}},
    ],
    "consumers": [{"group": "cg", "subscribe": ["TxTopic"]}],
    "duration": "100000s",
}
FIRST = {"pg-tx": 24, "pg-stuck": 3}  # the halves judged: the first ones each group decided


def first_hand(c: Any, group: str) -> dict[str, str]:
    """msg_id -> the local transaction's state, for the group's first halves."""
    out: dict[str, str] = {}
    for e in c.events("tx.local"):
        if e["group"] == group and not e["from_check"] and len(out) < FIRST[group]:
            out[e["msg_id"]] = e["state"]
    return out


def test_commit_rollback_unknown_then_checked_and_discarded_after_the_maximum(start_cluster) -> None:
    c = start_cluster(TOPO)

    def resolved() -> bool:
        done = {e["msg_id"] for e in c.events("tx.end") if e["result"] == "ok" and e["action"] != "none"}
        done |= {e["msg_id"] for e in c.events("tx.discard")}
        judged = {**first_hand(c, "pg-tx"), **first_hand(c, "pg-stuck")}
        return len(judged) == sum(FIRST.values()) and set(judged) <= done

    c.wait_for(resolved, 90, "the first halves of each group committed, rolled back or discarded")
    c.finish(drain=True)
    tx, stuck = first_hand(c, "pg-tx"), first_hand(c, "pg-stuck")
    assert set(Counter(tx.values())) == {"COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"}, tx
    halves = {e["msg_id"]: e for e in c.events("tx.half")}
    checks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in c.events("tx.check"):
        checks[e["msg_id"]].append(e)
    ends: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in c.events("tx.end"):
        ends[e["msg_id"]].append(e)
    answers = {e["msg_id"]: e["state"] for e in c.events("tx.local") if e["from_check"]}
    consumed = Counter(m for e in c.events("consume") if e["group"] == "cg" for m in e["msg_ids"])
    sends = {e["msg_id"] for e in c.events("send") if e.get("transaction") == "half" and e["outcome"] == "ok"}

    for msg_id, state in tx.items():
        assert msg_id in halves and msg_id in sends, msg_id
        oks = [e for e in ends[msg_id] if e["result"] == "ok"]
        if state == "UNKNOW":
            (check,) = checks[msg_id]  # checked exactly once: the answer ended it
            assert check["client_id"] is not None and check["check_times"] == 1 and check["age_ms"] >= 30000
            decided = {"COMMIT_MESSAGE": "commit", "ROLLBACK_MESSAGE": "rollback"}[answers[msg_id]]
            assert [(e["action"], e["from_check"]) for e in oks] == [(decided, True)], ends[msg_id]
        else:
            assert msg_id not in checks, (msg_id, checks[msg_id])  # ended first-hand: never checked
            decided = {"COMMIT_MESSAGE": "commit", "ROLLBACK_MESSAGE": "rollback"}[state]
            assert [(e["action"], e["from_check"]) for e in oks] == [(decided, False)], ends[msg_id]
        assert consumed[msg_id] == (1 if decided == "commit" else 0), (msg_id, state, decided)

    for msg_id in stuck:
        assert [e["check_times"] for e in checks[msg_id]] == [1, 2, 3]
        (discard,) = [e for e in c.events("tx.discard") if e["msg_id"] == msg_id]
        assert discard["reason"] == "max_checks" and discard["check_times"] == 3
        assert consumed[msg_id] == 0 and not [e for e in ends[msg_id] if e["action"] != "none"]
    assert all(e["action"] == "none" and e["result"] == "ignored" for m in stuck for e in ends[m])
    # nothing but committed messages reached the consumer
    committed = {e["msg_id"] for e in c.events("tx.end") if e["action"] == "commit" and e["result"] == "ok"}
    assert set(consumed) <= committed
    assert contract_problems(c.run_dir) == []
