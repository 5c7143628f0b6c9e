"""ali-ons, a real RocketMQ 4.x client, against an emulated cluster over the remoting protocol:
a producer and a push consumer through a master killed and restarted mid-run, every acked
message consumed byte for byte, and the report naming both clients (docs/real-clients.md).
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from pathlib import Path
from typing import Any

import pytest

from rmqemu import emulator
from tests.realclients.drivers import NodeProcess, NodeProcs, wait_exit, wait_for, wait_for_line

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TOPOLOGY: dict[str, Any] = {
    "name": "alions", "seed": 11, "timing": {"scale": 1.0}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 0, "autoCreateTopicEnable": True},
                {"name": "broker-b", "slaves": 0, "autoCreateTopicEnable": True}],
    "topics": [{"name": "RealTopic", "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "remoting": True, "duration": "600s",
}
# ali-ons's intervals, shortened so that a route change and a rebalance take a second, not 30
FAST = {"pollNameServerInteval": 1000, "heartbeatBrokerInterval": 2000, "rebalanceInterval": 1000,
        "persistConsumerOffsetInterval": 1000}
# a text body, a binary one over 4 KiB (ali-ons deflates it: sysFlag bit 0) and a small binary one
BODIES = [b"hello from ali-ons", os.urandom(5000), bytes(range(256))]
SENDS = 90


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def acked(producer: NodeProcess) -> dict[str, str]:
    """msgId -> sha256 of the body of every send ali-ons reported as done."""
    return {line["msgId"]: line["sha256"] for line in producer.lines() if line.get("ok")}


def received(consumer: NodeProcess) -> dict[str, set[bytes]]:
    """msgId -> the body of each delivery of it."""
    out: dict[str, set[bytes]] = {}
    for line in consumer.lines():
        if "msgId" in line and line.get("action") == "consumed":
            out.setdefault(line["msgId"], set()).add(base64.b64decode(line["body_b64"]))
    return out


def as_sent(body: bytes, original: bytes) -> str | None:
    """"same" when ``body`` is ``original``; "deflated once more" when it inflates to ``original``:
    ali-ons 3.12.0 deflates ``msg.body`` in place on every attempt (``sendKernelImpl``), so the retry
    of a body over 4 KiB sends the deflated bytes, deflated again (flagged) if still 4 KiB or more,
    else unflagged, and its consumer inflates once or not at all (the Java client restores the body
    after each attempt). Anything else: None, a body the emulator broke."""
    if body == original:
        return "same"
    try:
        return "deflated once more" if zlib.decompress(body) == original else None
    except zlib.error:
        return None


def test_a_master_killed_and_restarted_loses_nothing_acked(tmp_path: Path, node_procs: NodeProcs,
                                                           rmqemu_spark: Any) -> None:
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        assert c.namesrv_addr and c.namesrv_addr.startswith("127.0.0.1:")
        consumer = node_procs.consumer({"nameSrv": c.namesrv_addr, "topic": "RealTopic",
                                        "consumerGroup": "CG_REAL", **FAST})
        wait_for_line(consumer, lambda line: len(line.get("assigned") or []) == 8, 60, "all 8 queues assigned")
        producer = node_procs.producer({
            "nameSrv": c.namesrv_addr, "topic": "RealTopic", "producerGroup": "PG_REAL", "count": SENDS,
            "interval_ms": 50, "bodies": [base64.b64encode(b).decode() for b in BODIES], **FAST})
        wait_for(lambda: len(acked(producer)) >= 20, 60, "20 acked sends", describe=producer.describe)
        kill = c.kill("broker-a-0", restart_after="3s")
        c.wait_for(lambda: not kill.active, 60, "broker-a-0 restarted")
        assert wait_exit(producer, 120) == 0, producer.describe()
        sent = acked(producer)
        assert len(sent) >= SENDS // 2, producer.describe()  # most go to broker-b while broker-a is down
        assert {sha(b) for b in BODIES} >= set(sent.values())

        def all_delivered() -> bool:
            return set(sent) <= set(received(consumer))
        wait_for(all_delivered, 120, "every acked message consumed", describe=consumer.describe)
        got, by_digest = received(consumer), {sha(b): b for b in BODIES}
        how = {m: {as_sent(body, by_digest[digest]) for body in got[m]} for m, digest in sent.items()}
        assert all(None not in kinds for kinds in how.values()), f"bodies changed on the way: {how}"
        assert all(len(by_digest[sent[m]]) > 4096 for m, kinds in how.items() if "deflated once more" in kinds)
        assert any(kinds == {"same"} for m, kinds in how.items() if len(by_digest[sent[m]]) > 4096)  # deflated once
        on_a = [line["msgId"] for line in producer.lines() if line.get("ok") and line["queue"]["broker"] == "broker-a"]
        assert on_a, "no acked message was stored on the master that was killed"
        clients = {f"client@{producer.pid}", f"client@{consumer.pid}"}
        node_procs.stop_all()
        metrics = c.metrics(rmqemu_spark, only=["staleness", "sends", "consumption", "availability"])
    assert {row["client"] for row in metrics["staleness"]["clients"]} == clients
    assert {row["producer"] for row in metrics["availability"]["windows"]} == {f"client@{producer.pid}"}
    assert metrics["sends"]["ok"] >= len(sent) and metrics["consumption"]["lost"] == 0
    assert [g["lost"] for g in metrics["consumption"]["groups"] if g["group"] == "CG_REAL"] == [0]


def test_a_failed_consumption_is_sent_back_and_redelivered(tmp_path: Path, node_procs: NodeProcs) -> None:
    """ali-ons sends a message its listener failed back (CONSUMER_SEND_MSG_BACK, found by the
    commit-log offset in the msgId it computed from the pulled message's store host): it comes back
    through %RETRY%<group> (the client gives it its RETRY_TOPIC again) with reconsumeTimes 1 and
    the same body."""
    topology = {**TOPOLOGY, "name": "alions-retry", "brokers": [TOPOLOGY["brokers"][0]],
                "topics": [{"name": "RealTopic", "brokers": ["broker-a"], "queues": 2}]}
    with emulator.Cluster(topology, run_dir=tmp_path / "run") as c:
        consumer = node_procs.consumer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "consumerGroup": "CG_RETRY",
                                        "fail_times": 1, **FAST})
        wait_for_line(consumer, lambda line: len(line.get("assigned") or []) == 2, 60, "both queues assigned")
        producer = node_procs.producer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "producerGroup": "PG_RETRY",
                                        "count": 5, "bodies": [base64.b64encode(BODIES[2]).decode()], **FAST})
        assert wait_exit(producer, 60) == 0, producer.describe()
        sent = acked(producer)
        assert len(sent) == 5

        def redelivered() -> list[dict[str, Any]]:
            again = [line for line in consumer.lines() if line.get("action") == "consumed"
                     and line.get("reconsumeTimes") == 1 and line.get("originMsgId") in sent]
            return again if {line["originMsgId"] for line in again} == set(sent) else []
        again = wait_for(redelivered, 90, "every message redelivered once after its failure",
                         describe=consumer.describe)
        failed = {line["msgId"] for line in consumer.lines() if line.get("action") == "failed"}
        assert failed == set(sent)  # each failed once, on its first delivery
        assert all(line["properties"]["RETRY_TOPIC"] == line["topic"] == "RealTopic"  # the client restores it
                   and base64.b64decode(line["body_b64"]) == BODIES[2] for line in again)
