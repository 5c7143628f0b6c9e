"""The C++ client's transactional producer (rocketmq-client-cpp 2.1.0 through PyPI's
rocketmq-python-cvs, its C API driven by ctypes: tests/realclients/cpp/transaction.py) against two
emulated masters (docs/rocketmq-model.md §9): halves, the oneway END_TRANSACTION after the local
transaction, CHECK_TRANSACTION_STATE pushed over the producer's connection and the client's
answers, and what a C++ push consumer is delivered of it all.

Each message's fate is planned by its key: the local transaction commits a third, rolls a third
back and answers UNKNOWN for the rest; the checker commits half of the UNKNOWN ones and rolls the
others back. The brokers check quickly (``transactionCheckInterval`` 2 s, ``transactionTimeOut``
1 s), so the test ends when every half is resolved, without a fixed sleep. Everything is held
exactly to what the client printed: which halves the brokers checked (once each, the UNKNOWN ones
only), which ends they handled and how, which messages the consumer got (the committed ones, each
once, bodies byte for byte) and what the topic holds.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rmqemu import emulator
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.realclients.drivers import NodeProcess, NodeProcs, wait_for, wait_for_line

pytestmark = pytest.mark.integration

TOPIC, GROUP, CONSUMER_GROUP = "TxTopic", "PG_CPP_TX", "CG_CPP_TX"
MASTERS = ("broker-a-0", "broker-b-0")
HALF, SYS_GROUP = "RMQ_SYS_TRANS_HALF_TOPIC", "CID_RMQ_SYS_TRANS"
FAST_CHECKS = {"autoCreateTopicEnable": True, "transactionCheckInterval": 2000, "transactionTimeOut": 1000}
TOPOLOGY: dict[str, Any] = {
    "name": "cpp-transactions", "seed": 41, "timing": {"scale": 1.0}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 0, **FAST_CHECKS}, {"name": "broker-b", "slaves": 0, **FAST_CHECKS}],
    "topics": [{"name": TOPIC, "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "remoting": True, "duration": "600s",
}
N = 30
END_ACTION = {"COMMIT": "commit", "ROLLBACK": "rollback", "UNKNOWN": "none"}


def body(i: int) -> bytes:
    """Non-ASCII text (no NUL: the C API hands a received body back as a C string); two bodies over
    4 KiB, which the client deflates (sysFlag bit 0), one of them checked back."""
    text = f"交易 #{i}: Grüße, ünïcødé — 🚀 ✓ Ωμέγα\u2028next line\r\n"
    return (text * (100 if i in (3, 8) else 1)).encode()


def plans() -> list[dict[str, str]]:
    """Key ``tx-<i>``: local COMMIT, ROLLBACK, UNKNOWN in turn; an UNKNOWN one's check answers COMMIT
    or ROLLBACK in turn. The first is a COMMIT: the checkable halves all follow the heartbeat that
    the script sends after the first send (transaction.py: ``heartbeat_group``)."""
    out = []
    for i in range(N):
        local = ("COMMIT", "ROLLBACK", "UNKNOWN")[i % 3]
        check = ("COMMIT", "ROLLBACK")[(i // 3) % 2] if local == "UNKNOWN" else "UNKNOWN"
        out.append({"key": f"tx-{i}", "body": base64.b64encode(body(i)).decode(), "local": local, "check": check})
    return out


def of(proc: NodeProcess, action: str) -> list[dict[str, Any]]:
    return [line for line in proc.lines() if line.get("action") == action]


def resolved(c: emulator.Cluster) -> bool:
    """Every half on every master is behind the check service's half offset: a pass found nothing
    left to check, and would have checked again any copy whose answer had not arrived
    (docs/rocketmq-model.md §9.4)."""
    for node in MASTERS:
        state = c.state(node)
        stored = state["queues"].get(f"{HALF}:0", 0)
        if stored and state["offsets"].get(f"{HALF}@{SYS_GROUP}", {}).get("0") != stored:
            return False
    return True


def test_cpp_transactional_producer_commits_rolls_back_and_answers_checks(
        tmp_path: Path, node_procs: NodeProcs) -> None:
    started = time.monotonic()
    planned = plans()
    plan = {p["key"]: p for p in planned}
    unknown = {k for k, p in plan.items() if p["local"] == "UNKNOWN"}
    committed = {k for k, p in plan.items() if p["local"] == "COMMIT" or (k in unknown and p["check"] == "COMMIT")}
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        common = {"nameSrv": c.namesrv_addr, "topic": TOPIC}
        consumer = node_procs.cpp({"role": "consumer", "group": CONSUMER_GROUP, **common}, "consumer", "normal.py")
        producer = node_procs.cpp({"group": GROUP, "messages": planned, "heartbeat_group": f"{GROUP}_HB", **common},
                                  "producer", "transaction.py")
        wait_for_line(producer, lambda line: line.get("action") == "all_sent", 60, "every half sent")
        wait_for(lambda: {x["keys"] for x in of(consumer, "consumed")} >= committed, 60,
                 "every committed message consumed", describe=lambda: consumer.describe() + producer.describe())
        wait_for(lambda: {x["key"] for x in of(producer, "check")} >= unknown, 30, "every UNKNOWN half checked",
                 describe=producer.describe)
        c.wait_for(lambda: resolved(c), 30, "the check service past every half")
        assert set(node_procs.stop_all().values()) == {0}, [p.describe() for p in node_procs.procs]
        events = {kind: c.events(kind) for kind in ("tx.half", "tx.end", "tx.check", "tx.discard",
                                                    "client.heartbeat", "wire.bad_frame")}
        stored = sum(n for node in MASTERS for q, n in c.state(node)["queues"].items() if q.startswith(f"{TOPIC}:"))
        run_dir = c.finish()
    wall = time.monotonic() - started

    sent = {x["key"]: x for x in of(producer, "sent")}
    assert set(sent) == set(plan) and all(x["ok"] and x["status"] == 0 for x in sent.values()), sent
    uniq = {k: x["msgId"] for k, x in sent.items()}  # the UNIQ_KEY: this client's transactionId
    key_of = {u: k for k, u in uniq.items()}
    assert len(key_of) == N

    # the local transaction ran once per half, after its SEND_OK, with the half's UNIQ_KEY
    executed = of(producer, "execute")
    assert sorted((x["key"], x["uniq"], x["answer"]) for x in executed) == \
        sorted((k, uniq[k], p["local"]) for k, p in plan.items()), executed
    assert not of(producer, "callback_error"), of(producer, "callback_error")
    assert all(x["result_transaction_id"] == "" for x in executed), executed  # 4.9.4's send answer has none

    # one half per send, at the half-queue offset the send was answered with, on both masters
    halves = {e["msg_id"]: e for e in events["tx.half"]}
    assert len(events["tx.half"]) == N and set(halves) == set(key_of), events["tx.half"]
    assert all(h["topic"] == TOPIC and h["group"] == GROUP and h["offset"] == sent[key_of[m]]["offset"]
               for m, h in halves.items()), halves
    assert {h["node"] for h in halves.values()} == set(MASTERS)

    # the heartbeat named the group on both masters before any check: every check found its channel
    client_id = {e["client_id"] for e in events["client.heartbeat"] if GROUP in e["producer_groups"]}
    assert len(client_id) == 1, events["client.heartbeat"]

    # the broker checked exactly the UNKNOWN halves, each once (its answer came before the next
    # pass), on the master holding it, and asked this producer; the client's checker saw each
    checks = events["tx.check"]
    assert sorted(key_of[e["msg_id"]] for e in checks) == sorted(unknown), checks
    assert all(e["check_times"] == 1 and e["client_id"] in client_id and e["node"] == halves[e["msg_id"]]["node"]
               for e in checks), checks
    check_of = {e["msg_id"]: e for e in checks}
    answered = of(producer, "check")
    assert sorted(x["key"] for x in answered) == sorted(unknown), answered
    for x in answered:
        e, h = check_of[uniq[x["key"]]], halves[uniq[x["key"]]]
        # the C++ client decodes the pushed message: the copy's half-queue offset, the real topic
        # and queue, the body inflated again, TRANSACTION_CHECK_TIMES; its msgId is the UNIQ_KEY
        assert (x["uniq"], x["msgId"], x["n"], x["check_times"], x["answer"]) == \
            (uniq[x["key"]], uniq[x["key"]], 1, 1, plan[x["key"]]["check"]), x
        assert (x["queue_offset"], x["topic"], x["queue_id"]) == (e["offset"], TOPIC, h["queue_id"]), (x, e, h)
        assert x["sha256"] == hashlib.sha256(body(int(x["key"][3:]))).hexdigest(), x

    # every END_TRANSACTION the brokers handled is one the client decided: a first-hand one per
    # half naming the half (commit, rollback, or type 0 ignored), then one per check naming the copy
    ends = events["tx.end"]
    assert len(ends) == N + len(unknown), ends
    for k, p in plan.items():
        h = halves[uniq[k]]
        first = [e for e in ends if e["node"] == h["node"] and e["offset"] == h["offset"]]
        assert [(e["msg_id"], e["action"], e["result"]) for e in first] == \
            [(uniq[k], END_ACTION[p["local"]], "ignored" if p["local"] == "UNKNOWN" else "ok")], (k, first)
        if k in unknown:
            e = check_of[uniq[k]]
            answer = [x for x in ends if x["node"] == h["node"] and x["offset"] == e["offset"]]
            assert [(x["msg_id"], x["action"], x["result"]) for x in answer] == \
                [(uniq[k], END_ACTION[p["check"]], "ok")], (k, answer)
    # this client writes fromTransactionCheck as "1", which 4.9.4 reads as Boolean.parseBoolean: false
    assert not any(e["from_check"] for e in ends), ends
    assert not events["tx.discard"] and not events["wire.bad_frame"], (events["tx.discard"], events["wire.bad_frame"])

    # the consumer got the committed messages, each once, byte for byte, and nothing else: the topic
    # holds exactly those
    consumed = of(consumer, "consumed")
    assert Counter(x["keys"] for x in consumed) == Counter(committed), sorted(x["keys"] for x in consumed)
    assert all(x["msgId"] == uniq[x["keys"]] and base64.b64decode(x["body_b64"]) == body(int(x["keys"][3:]))
               for x in consumed), consumed
    assert stored == len(committed)

    # the report's transactions section counts what the client saw (the analysis Spark's tasks run)
    report = document(analyse_dirs([str(run_dir)], plots_too=False)[0], ["transactions"])["transactions"]
    by_check = {k for k in unknown if plan[k]["check"] == "COMMIT"}
    assert (report["halves"]["stored"], report["committed"]["total"], report["committed"]["first_hand"],
            report["committed"]["after_check"], report["committed"]["consumed"]) == \
        (N, len(committed), len(committed) - len(by_check), len(by_check), len(set(x["keys"] for x in consumed)))
    assert (report["rolled_back"]["total"], report["rolled_back"]["after_check"], report["rolled_back"]["delivered"]) \
        == (N - len(committed), len(unknown) - len(by_check), 0)
    assert (report["checks"]["sent"], report["checks"]["no_channel"], report["open"]["total"],
            report["discarded"]["total"], report["duplicates"]["stored_twice"]) == (len(answered), 0, 0, 0, 0)
    print(f"cpp-transactions: {N} halves, {len(committed)} committed ({len(unknown) // 2} by check), "
          f"{len(checks)} checks; test {wall:.1f} s")
