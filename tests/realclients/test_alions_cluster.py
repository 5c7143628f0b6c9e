"""ali-ons, a real RocketMQ 4.x client, against an emulated cluster over the remoting protocol:
a producer and a push consumer through a master killed and restarted mid-run, every acked
message consumed byte for byte (delayed ones too, those the dead master held after its restart),
and the report naming both clients (docs/real-clients.md); delay levels and the retry schedule,
and what the report says of them: late deliveries in the kill's row, retries that are neither
consumed-but-unacked nor lost, and a consumer that stopped early gone, not lost.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest

from rmqemu import emulator
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.realclients.drivers import NodeProcess, NodeProcs, stop_process, wait_exit, wait_for, wait_for_line

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
# a text body, a binary one over 4 KiB (ali-ons deflates it: sysFlag bit 0), a small binary one, and
# JSON as JavaScript writes it: CR and LF escaped, U+2028, U+0085 and U+2029 left as they are
BODIES = [b"hello from ali-ons", os.urandom(5000), bytes(range(256)),
          json.dumps({"note": "line\u2028separator\u0085next line\u2029paragraph\r\nend"}, ensure_ascii=False,
                     separators=(",", ":")).encode()]
SENDS = 90
DELAY_MS = {0: 0, 1: 1000}  # 4.9's level 1
DEFAULT_LEVELS_MS = {2: 5000, 3: 10000, 4: 30000, 5: 60000}
RETRY_MS = 1000  # level 3 with the test's messageDelayLevel "1s 5s 1s"
TOLERANCE_MS = 1000  # a send's round trip, the broker's timer and the consumer's held pull: ms each at scale 1.0


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def acked(producer: NodeProcess) -> dict[str, str]:
    """msgId -> sha256 of the body of every send ali-ons reported as done."""
    return {line["msgId"]: line["sha256"] for line in producer.lines() if line.get("ok")}


def received(consumer: NodeProcess, alias: dict[str, str] | None = None) -> dict[str, set[bytes]]:
    """msgId -> the body of each delivery of it. ``alias``: a delivered copy's msgId -> the msgId its
    send was acked with (a delayed message reaches its topic as a new copy, and ali-ons sets no
    UNIQ_KEY: ``delay.deliver``'s offset_msg_id -> msg_id)."""
    out: dict[str, set[bytes]] = {}
    for line in consumer.lines():
        if "msgId" in line and line.get("action") == "consumed":
            msg_id = (alias or {}).get(line["msgId"], line["msgId"])
            out.setdefault(msg_id, set()).add(base64.b64decode(line["body_b64"]))
    return out


def local_metrics(c: emulator.Cluster) -> dict[str, Any]:
    """The finished run's metrics.json, analysed in this process: the core Spark's tasks run (the first
    test runs it in Spark), without a Spark job's seconds."""
    return document(analyse_dirs([str(c.finish())], plots_too=False)[0])


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
            "interval_ms": 50, "bodies": [base64.b64encode(b).decode() for b in BODIES], "delay_levels": [0, 0, 1],
            **FAST})
        wait_for(lambda: len(acked(producer)) >= 20, 60, "20 acked sends", describe=producer.describe)
        kill = c.kill("broker-a-0", restart_after="3s")
        c.wait_for(lambda: not kill.active, 60, "broker-a-0 restarted")
        assert wait_exit(producer, 120) == 0, producer.describe()
        sent = acked(producer)
        assert len(sent) >= SENDS // 2, producer.describe()  # most go to broker-b while broker-a is down
        assert {sha(b) for b in BODIES} >= set(sent.values())

        def aliases() -> dict[str, str]:
            return {e["offset_msg_id"]: e["msg_id"] for e in c.events("delay.deliver")}

        def all_delivered() -> bool:
            return set(sent) <= set(received(consumer, aliases()))
        wait_for(all_delivered, 120, "every acked message consumed", describe=consumer.describe)
        got, by_digest = received(consumer, aliases()), {sha(b): b for b in BODIES}
        how = {m: {as_sent(body, by_digest[digest]) for body in got[m]} for m, digest in sent.items()}
        assert all(None not in kinds for kinds in how.values()), f"bodies changed on the way: {how}"
        assert all(len(by_digest[sent[m]]) > 4096 for m, kinds in how.items() if "deflated once more" in kinds)
        assert any(kinds == {"same"} for m, kinds in how.items() if len(by_digest[sent[m]]) > 4096)  # deflated once
        on_a = [line["msgId"] for line in producer.lines() if line.get("ok") and line["queue"]["broker"] == "broker-a"]
        assert on_a, "no acked message was stored on the master that was killed"
        killed_at = c.events("node.exit", node="broker-a-0")[-1]["ts"]
        restarted_at = c.events("node.start", node="broker-a-0")[-1]["ts"]
        held = {e["msg_id"] for e in c.events("delay.park", node="broker-a-0") if e["ts"] < killed_at} - {
            e["msg_id"] for e in c.events("delay.deliver", node="broker-a-0") if e["ts"] < killed_at}
        after = {e["msg_id"]: e for e in c.events("delay.deliver", node="broker-a-0") if e["ts"] > restarted_at}
        assert held and held <= set(after), (held, after)  # what the dead master held, delivered after its restart
        # of those, the ones that fell due while it was dead (at scale 1.0 lateness_ms is wall ms); on a
        # loaded host one can fall due just before the kill, its delay timer late, and count as late only
        due_while_dead = {m for m in held if after[m]["ts"] - after[m]["lateness_ms"] >= killed_at}
        assert min(e["lateness_ms"] for e in c.events("delay.deliver")) >= 0  # and nothing ever early
        clients = {f"client@{producer.pid}", f"client@{consumer.pid}"}
        node_procs.stop_all()
        metrics = c.metrics(rmqemu_spark, only=["staleness", "sends", "consumption", "availability", "delays"])
    assert {row["client"] for row in metrics["staleness"]["clients"]} == clients
    assert {row["producer"] for row in metrics["availability"]["windows"]} == {f"client@{producer.pid}"}
    assert metrics["sends"]["ok"] >= len(sent) and metrics["consumption"]["lost"] == 0
    assert [g["lost"] for g in metrics["consumption"]["groups"] if g["group"] == "CG_REAL"] == [0]
    # what the dead master held came late, due while it was dead: the kill's row counts them
    delays = metrics["delays"]
    assert (delays["early"], delays["pending"]) == (0, 0) and delays["late"] >= len(held), delays
    [killed] = [f for f in metrics["staleness"]["faults"] if f["fault"] == "kill"]
    assert killed["late_deliveries"] >= len(due_while_dead) and killed["late_max_cluster_s"] > 1.0, killed


def first(lines: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    return next(line for line in lines if all(line.get(k) == v for k, v in match.items()))


def test_delayed_sends_arrive_after_their_level_and_a_failure_comes_back_on_the_retry_schedule(
        tmp_path: Path, node_procs: NodeProcs) -> None:
    """ali-ons sends with delay levels 0 and 1 (1 s) at scale 1.0: each arrives no sooner
    than its level's delay after it was sent, and within TOLERANCE_MS of it (docs/rocketmq-model.md
    §2.9). Its listener fails each message once: ali-ons sends it back (CONSUMER_SEND_MSG_BACK, found
    by the commit-log offset in the msgId it computed from the pulled message's store host), and it
    comes back through %RETRY%<group> with reconsumeTimes 1, the same body, RETRY_TOPIC, and as
    ORIGIN_MESSAGE_ID the msgId of the copy that failed, after level 3 (shortened to 1 s here by the
    broker's messageDelayLevel, to keep the test short)."""
    topology = {**TOPOLOGY, "name": "alions-retry",
                "brokers": [{**TOPOLOGY["brokers"][0], "messageDelayLevel": "1s 5s 1s"}],
                "topics": [{"name": "RealTopic", "brokers": ["broker-a"], "queues": 2}]}
    with emulator.Cluster(topology, run_dir=tmp_path / "run") as c:
        consumer = node_procs.consumer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "consumerGroup": "CG_RETRY",
                                        "fail_times": 1, **FAST})
        wait_for_line(consumer, lambda line: len(line.get("assigned") or []) == 2, 60, "both queues assigned")
        producer = node_procs.producer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "producerGroup": "PG_RETRY",
                                        "count": 4, "delay_levels": [0, 1], **FAST})
        assert wait_exit(producer, 60) == 0, producer.describe()
        sent = [line for line in producer.lines() if line.get("ok")]
        assert len(sent) == 4

        def redelivered() -> bool:
            return len([line for line in consumer.lines() if line.get("reconsumeTimes") == 1]) >= len(sent)
        wait_for(redelivered, 90, "every message redelivered once after its failure", describe=consumer.describe)
        lines = consumer.lines()
        for s in sent:
            failed = first(lines, sha256=s["sha256"], action="failed")
            again = first(lines, sha256=s["sha256"], action="consumed")
            delay = DELAY_MS[s["delayTimeLevel"]]
            # the copy that failed was stored when the level's delay was up: no sooner than sent + delay
            assert failed["storeTimestamp"] - s["born"] >= delay and failed["reconsumeTimes"] == 0, (s, failed)
            assert failed["ts"] - (s["born"] + delay) < TOLERANCE_MS, (s, failed)
            assert failed["properties"].get("DELAY") == (str(s["delayTimeLevel"]) if delay else None)
            assert again["ts"] - failed["ts"] >= RETRY_MS and again["reconsumeTimes"] == 1, (failed, again)
            assert again["ts"] - failed["ts"] < RETRY_MS + TOLERANCE_MS, (failed, again)
            assert (again["originMsgId"], again["properties"]["RETRY_TOPIC"], again["topic"]) == (
                failed["msgId"], "RealTopic", "RealTopic")  # the client restores the topic
            assert base64.b64decode(again["body_b64"]) == base64.b64decode(failed["body_b64"])
        print("alions-retry: ms after due:", sorted(first(lines, sha256=s["sha256"], action="failed")["ts"]
                                                    - s["born"] - DELAY_MS[s["delayTimeLevel"]] for s in sent))
        lateness = [e["lateness_ms"] for e in c.events("delay.deliver")]
        assert len(lateness) == 2 + 4 and min(lateness) >= 0  # 2 delayed sends, 4 retries
        metrics = local_metrics(c)
    # the report: 4 retries at reconsumeTimes 1, their copies retries, not consumed but never acked
    want = {"group": "CG_RETRY", "topic": "RealTopic", "reconsume_times": 1, "retried": 4, "dead_lettered": 0,
            "dropped": 0}
    assert metrics["retries"]["by_reconsume_times"] == [want]
    assert (metrics["retries"]["deliveries"], metrics["consumption"]["consumed_unacked"]) == (4, 0)
    assert [(t["topic"], t["acked"], t["lost"]) for t in metrics["consumption"]["by_topic"]] == [("RealTopic", 4, 0)]
    assert {(t["topic"], t["sent"], t["parked"], t["early"]) for t in metrics["delays"]["by_topic"]} == {
        ("RealTopic", 2, 2, 0), ("%RETRY%CG_RETRY", 0, 4, 0)}


def test_at_scale_0_01_delayed_sends_wait_their_scaled_levels(tmp_path: Path, node_procs: NodeProcs) -> None:
    """The same delay levels from ali-ons at timing.scale 0.01: level 2 (5 s) .. 5 (1 min) wait 50 ..
    600 wall ms, judged by the broker's due time turned into host time (docs/design.md §3), never
    early, and the consumer has each of them after that. ali-ons heartbeats every 300 ms here: the
    broker's scaled 120 s channel expiry is 1.2 wall s. The consumer then stops before the run does
    and 3 more messages are sent: the report has them gone with it, not lost."""
    scale = 0.01
    topology = {**TOPOLOGY, "name": "alions-scaled", "timing": {"scale": scale}, "brokers": [TOPOLOGY["brokers"][0]],
                "topics": [{"name": "RealTopic", "brokers": ["broker-a"], "queues": 2}]}
    quick = {**FAST, "heartbeatBrokerInterval": 300}
    with emulator.Cluster(topology, run_dir=tmp_path / "run") as c:
        consumer = node_procs.consumer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "consumerGroup": "CG_SCALED",
                                        **quick})
        wait_for_line(consumer, lambda line: len(line.get("assigned") or []) == 2, 60, "both queues assigned")
        producer = node_procs.producer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "producerGroup": "PG_SCALED",
                                        "count": 8, "delay_levels": [2, 3, 4, 5], **quick})
        assert wait_exit(producer, 60) == 0, producer.describe()
        sent = {line["msgId"]: line for line in producer.lines() if line.get("ok")}
        assert len(sent) == 8

        def arrived() -> dict[str, dict[str, Any]]:
            by_copy = {e["offset_msg_id"]: e for e in c.events("delay.deliver")}
            got = {by_copy[line["msgId"]]["msg_id"]: {**line, "deliver": by_copy[line["msgId"]]}
                   for line in consumer.lines() if line.get("action") == "consumed" and line["msgId"] in by_copy}
            return got if set(sent) <= set(got) else {}
        got = wait_for(arrived, 60, "every delayed message consumed", describe=consumer.describe)
        anchor = json.loads((c.run_dir / "manifest.json").read_text())["started_ms"]
        parks = {e["msg_id"]: e for e in c.events("delay.park")}
        late = []
        for m, s in sent.items():
            park, deliver = parks[m], got[m]["deliver"]
            assert (park["level"], park["delay_ms"]) == (s["delayTimeLevel"], DEFAULT_LEVELS_MS[s["delayTimeLevel"]])
            due_host = anchor + (park["due_ms"] - anchor) * scale
            assert deliver["lateness_ms"] >= 0 and deliver["ts"] >= due_host - 1 and got[m]["ts"] >= due_host - 1
            assert got[m]["properties"]["REAL_TOPIC"] == "RealTopic"  # kept in the delivered copy
            late.append(round(got[m]["ts"] - due_host))
        print("alions-scaled: consumed ms after due:", sorted(late))
        stop_process(consumer)
        c.wait_for(lambda: any(e["group"] == "CG_SCALED" and e["remaining"] == 0 for e in c.events("broker.consumer")
                               if e["change"] == "left"), 30, "the consumer's group left the broker")
        after = node_procs.producer({"nameSrv": c.namesrv_addr, "topic": "RealTopic", "producerGroup": "PG_AFTER",
                                     "count": 3, **quick})
        assert wait_exit(after, 60) == 0 and len([s for s in after.lines() if s.get("ok")]) == 3, after.describe()
        metrics = local_metrics(c)
    con, delays = metrics["consumption"], metrics["delays"]
    assert (con["lost"], con["gone"], con["lost_per_group"], con["gone_per_group"]) == (0, 3, 0, 3), con
    assert [(g["group"], g["expected"], g["consumed"], g["gone"]) for g in con["groups"]] == [("CG_SCALED", 11, 8, 3)]
    assert [delays[k] for k in ("sent", "parked", "delivered", "early", "pending")] == [8, 8, 8, 0, 0], delays
    assert delays["on_time"] + delays["late"] == 8, delays
