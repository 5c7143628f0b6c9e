"""The Apache RocketMQ C++ client (2.x, through PyPI's rocketmq-python-cvs: tests/realclients/pyclient.py),
a second real-client lineage after ali-ons, consuming orderly against an emulated cluster: its queue
locks, a rebalance that hands half the queues from one consumer to another through the broker's
locks, and the report's per-queue order check (docs/design.md §7 "Order": the sharding key stays in
the client, so order is judged in queue-offset order) held exactly to what the clients printed.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from rmqemu import emulator
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from rmqemu.reports.results import RunResult
from tests.realclients.drivers import NodeProcess, NodeProcs, wait_for, wait_for_line

pytestmark = pytest.mark.integration

TOPIC, GROUP, BROKERS = "RealTopic", "CG_CPP", ("broker-a-0", "broker-b-0")
TOPOLOGY: dict[str, Any] = {
    "name": "cpp-orderly", "seed": 11, "timing": {"scale": 1.0}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 0, "autoCreateTopicEnable": True},
                {"name": "broker-b", "slaves": 0, "autoCreateTopicEnable": True}],
    "topics": [{"name": TOPIC, "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "remoting": True, "duration": "600s",
}
KEYS, FIRST, SECOND = 16, 160, 160  # 16 keys over 8 queues: 2 keys and 20 messages a queue per batch


def consumed(proc: NodeProcess) -> list[dict[str, Any]]:
    return [line for line in proc.lines() if line.get("action") == "consumed"]


def acked(producer: NodeProcess) -> dict[str, dict[str, Any]]:
    return {line["msgId"]: line for line in producer.lines() if line.get("action") == "sent" and line["ok"]}


def send(producer: NodeProcess, n: int, batch: int) -> dict[str, dict[str, Any]]:
    """Ask the producer for ``n`` more ordered sends and wait for them; every send acked so far."""
    assert producer.stdin is not None
    producer.stdin.write(json.dumps({"send": n}).encode() + b"\n")
    producer.stdin.flush()
    wait_for_line(producer, lambda line: line.get("batch") == batch, 60, f"batch {batch} sent")
    return acked(producer)


def holders(c: emulator.Cluster) -> dict[str, list[str]]:
    """Queue (``topic:broker:id``) of the topic -> the peers the brokers granted its lock, in order."""
    out: dict[str, list[str]] = defaultdict(list)
    for e in c.events("broker.lock"):
        unit = f"{e['topic']}:{e['broker']}:{e['queue_id']}"
        if e["topic"] == TOPIC and e["change"] in ("locked", "taken_over") and e["peer"] not in out[unit]:
            out[unit].append(e["peer"])
    return dict(out)


def committed(c: emulator.Cluster) -> dict[str, int]:
    """Queue (``broker:id``) of the topic -> the offset the group committed there."""
    return {f"{node[:-2]}:{q}": off for node in BROKERS
            for q, off in c.state(node)["offsets"].get(f"{TOPIC}@{GROUP}", {}).items()}


def stored_counts(c: emulator.Cluster) -> dict[str, int]:
    """Queue (``broker:id``) of the topic -> how many messages its broker holds."""
    return {f"{node[:-2]}:{key.rpartition(':')[2]}": n for node in BROKERS
            for key, n in c.state(node)["queues"].items() if key.rpartition(":")[0] == TOPIC}


def per_queue_truth(lines: dict[str, list[dict[str, Any]]], unit_of: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Queue -> (out of order, duplicates), from what the listeners printed (``lines``: consumer ->
    its lines), by the report's rules: in queue-offset order, a message is out of order when its
    first consumption comes before that of a smaller offset; a duplicate when consumed twice."""
    by_unit: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    for rows in lines.values():
        for i, line in enumerate(rows):
            by_unit[unit_of[line["msgId"]]].append((line["ts"], i, line["queue_offset"]))
    out = {}
    for unit, rows in by_unit.items():
        first: dict[int, int] = {}
        for place, (_, _, offset) in enumerate(sorted(rows)):
            first.setdefault(offset, place)
        times, latest, late = Counter(o for _, _, o in rows), -1, 0
        for offset in sorted(first):
            late += first[offset] < latest
            latest = max(latest, first[offset])
        out[unit] = (late, sum(n > 1 for n in times.values()))
    return out


def order_of(result: RunResult) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """The report's ``order`` section and its per-queue (out of order, duplicates)."""
    v = result.tables["order_violations"]
    per_unit: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for unit, kind in zip(v["unit"], v["violation"], strict=True):
        per_unit[unit][kind == "duplicate"] += 1
    return document(result, ["order"])["order"], {u: (n[0], n[1]) for u, n in per_unit.items()}


def test_an_orderly_cpp_consumer_hands_queues_over_and_each_queue_is_checked_in_offset_order(
        tmp_path: Path, node_procs: NodeProcs) -> None:
    """Consumer A locks all 8 queues and consumes batch 1; consumer B joins the group: the brokers
    push NOTIFY_CONSUMER_IDS_CHANGED, A gives up 4 queues (persists its offsets, unlocks) and B
    locks them (0.2 s here); then batch 2. The batches do not overlap the handover, so nothing A
    had pulled was unconsumed when it gave its queues up (it persisted its offsets before it
    unlocked), and what A's listener printed is what the brokers delivered to it while it held each
    queue: each queue's offsets are consumed once, in order, by A then (the queues that changed
    hands) B, and the report must say so, queue by queue. What A's pulls still held by the brokers
    (15 s long polling) were answered with after it let the queues go, A dropped: the report must
    leave exactly those out (``unheld``). With sends running through the handover, a message A had
    pulled but not consumed when it let go would be delivered twice on the wire and consumed once:
    the report could not tell, so this shape keeps the check exact."""
    started = time.monotonic()
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        common = {"nameSrv": c.namesrv_addr, "topic": TOPIC}
        a = node_procs.cpp({"role": "consumer", "group": GROUP, **common}, "consumer-a")
        c.wait_for(lambda: len(holders(c)) == 8, 60, "consumer A holding all 8 queues")
        producer = node_procs.cpp({"role": "producer", "group": "PG_CPP", "keys": KEYS, **common}, "producer")
        sent = send(producer, FIRST, 1)
        assert len(sent) == FIRST, producer.describe()
        wait_for(lambda: {m["msgId"] for m in consumed(a)} >= set(sent), 60, "A consuming batch 1", describe=a.describe)
        # this C++ client reads a new queue's start offset from the broker before it takes the lock
        # (Java's RebalancePushImpl locks first): B must find A's batch-1 offsets committed, or it
        # starts a queue at A's previous commit and the messages between are delivered twice
        c.wait_for(lambda: committed(c) == stored_counts(c), 30, "A's batch-1 offsets committed (5 s persist)")
        joined = time.monotonic()
        b = node_procs.cpp({"role": "consumer", "group": GROUP, **common}, "consumer-b")
        pa, pb = f"client@{a.pid}", f"client@{b.pid}"
        c.wait_for(lambda: sum(h == [pa, pb] for h in holders(c).values()) == 4, 60, "B holding 4 queues A gave up")
        handover_s = time.monotonic() - joined
        sent = send(producer, SECOND, 2)
        assert len(sent) == FIRST + SECOND, producer.describe()

        def all_consumed() -> bool:
            return {m["msgId"] for m in consumed(a) + consumed(b)} >= set(sent)
        wait_for(all_consumed, 60, "every acked message consumed", describe=lambda: a.describe() + b.describe())
        assert set(node_procs.stop_all().values()) == {0}, [p.describe() for p in node_procs.procs]
        queues = holders(c)
        stored = {e["msg_id"]: f"{e['topic']}:{e['broker']}:{e['queue_id']}" for e in c.events("send")
                  if e["outcome"] == "ok"}
        delivered = Counter((e["node"], m) for e in c.events("consume") if e["group"] == GROUP for m in e["msg_ids"])
        lock_ts = {(f"{e['topic']}:{e['broker']}:{e['queue_id']}", e["peer"], e["change"]): e["ts"]
                   for e in reversed(c.events("broker.lock"))}  # the first of each
        result = analyse_dirs([str(c.finish())], plots_too=False)[0]
    lines = {pa: consumed(a), pb: consumed(b)}
    print(f"cpp-orderly: handover {handover_s:.2f} s, test {time.monotonic() - started:.1f} s")

    # the clients' own view: the brokers stored each acked message where the producer's selector put
    # it (queue index -> one queue), and each consumer was given the offset the send was acked with
    unit_of = {m: stored[m] for m in sent}
    index_unit = {(s["queue_index"], unit_of[m]) for m, s in sent.items()}
    assert len(index_unit) == len({i for i, _ in index_unit}) == len({u for _, u in index_unit}) == 8, index_unit
    assert all(line["queue_offset"] == sent[line["msgId"]]["offset"] for rows in lines.values() for line in rows)
    for key in {s["key"] for s in sent.values()}:  # and each key's messages reached the listeners in send order
        seqs = [line["seq"] for line in sorted(lines[pa] + lines[pb], key=lambda x: x["ts"]) if line["key"] == key]
        assert seqs == sorted(set(seqs)) == list(range(len(seqs))), (key, seqs)

    # the handover: 4 queues had two holders, A then B; A unlocked each of them; each was consumed
    # by A (batch 1) then by B (batch 2) at the offsets that followed
    moved = {u for u, h in queues.items() if h == [pa, pb]}
    assert len(moved) == 4 and {u for u, h in queues.items() if h == [pa]} == set(queues) - moved, queues
    assert all(lock_ts[(u, pa, "unlocked")] < lock_ts[(u, pb, "locked")] for u in moved), lock_ts
    for unit in moved:
        offsets = {p: sorted(x["queue_offset"] for x in lines[p] if unit_of[x["msgId"]] == unit) for p in (pa, pb)}
        assert offsets[pa] and offsets[pb] and offsets[pa] + offsets[pb] == list(range(FIRST // 8 + SECOND // 8)), \
            (unit, offsets)

    # the deliveries no listener printed: the answers to A's pulls left at the brokers
    printed = {p: Counter(x["msgId"] for x in rows) for p, rows in lines.items()}
    dropped = {(node, m): n - printed[node][m] for (node, m), n in delivered.items() if n > printed[node][m]}
    assert dropped and {node for node, _ in dropped} == {pa} and {unit_of[m] for _, m in dropped} <= moved, dropped

    truth = per_queue_truth(lines, unit_of)
    checked = len({(unit_of[x["msgId"]], x["queue_offset"]) for rows in lines.values() for x in rows})
    order, per_unit = order_of(result)
    ooo, dups = sum(t[0] for t in truth.values()), sum(t[1] for t in truth.values())
    assert {u: per_unit.get(u, (0, 0)) for u in truth} == truth and set(per_unit) <= set(truth), (per_unit, truth)
    assert (order["queues"], order["messages"], order["keys"]) == (8, 0, 0), order
    assert order["groups"] == [{
        "group": GROUP, "by": "queue", "units": 8, "violated": sum(t != (0, 0) for t in truth.values()),
        "messages": checked, "consumed": checked, "out_of_order": ooo, "duplicates": dups,
        "remapped": 0, "handover": order["by_cause"]["handover"], "redelivery": order["by_cause"]["redelivery"],
        "unheld": sum(dropped.values())}], order
    assert order["by_cause"]["handover"] + order["by_cause"]["redelivery"] == ooo + dups

    # and the check can fail: B's first delivery of a queue it took over, moved one offset back
    # (to A's last), is a duplicate of A's, and the offset it replaced is not consumed
    bent = tmp_path / "bent"
    shutil.copytree(tmp_path / "run", bent, ignore=shutil.ignore_patterns("store", "logs"))
    unit = sorted(moved)[0]
    first_b = min(x["queue_offset"] for x in lines[pb] if unit_of[x["msgId"]] == unit)
    bend(bent, pb, unit, first_b)
    bent_order, bent_unit = order_of(analyse_dirs([str(bent)], plots_too=False)[0])
    was = per_unit.get(unit, (0, 0))
    assert bent_unit == {**per_unit, unit: (was[0], was[1] + 1)}, bent_unit
    assert (bent_order["duplicates"], bent_order["groups"][0]["messages"]) == (dups + 1, checked - 1), bent_order


def bend(run_dir: Path, node: str, unit: str, offset: int) -> None:
    """Rewrite the ``consume`` line of ``node`` that delivered ``offset`` of ``unit`` to say ``offset - 1``."""
    topic, broker, qid = unit.split(":")
    for path in (run_dir / "events").glob("*.jsonl"):
        rows = path.read_text().split("\n")[:-1]  # JSON lines end at "\n" only
        for i, raw in enumerate(rows):
            e = json.loads(raw)
            where = (e.get("kind"), e.get("node"), e.get("topic"), e.get("broker"), str(e.get("queue_id")))
            if where == ("consume", node, topic, broker, qid) and offset in (e.get("offsets") or []):
                e["offsets"] = [o - 1 if o == offset else o for o in e["offsets"]]
                rows[i] = json.dumps(e)
                path.write_text("\n".join(rows) + "\n")
                return
    raise AssertionError(f"no consume line of {node} delivered offset {offset} of {unit}")
