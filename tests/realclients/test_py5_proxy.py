"""The official RocketMQ 5 Python client (rocketmq-python-client 5.1.2, tests/realclients/py5client.py)
against two emulated proxies (docs/rocketmq-model.md §10): normal, FIFO, delay and transactional
sends; a SimpleConsumer that changes a lease, sees the redelivery and acks; a PushConsumer; a FIFO
group in order; halves committed first-hand and by the proxy's relay of the broker's check. Bodies
are arbitrary bytes and Unicode, held byte for byte. Then the report's counts against what the
client printed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from rmqemu import emulator
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.realclients.drivers import NodeProcess, NodeProcs, wait_for

pytestmark = pytest.mark.integration

FAST_CHECKS = {"transactionCheckInterval": 2000, "transactionTimeOut": 1000}
TOPOLOGY: dict[str, Any] = {
    "name": "py5-proxy", "seed": 5, "timing": {"scale": 1.0},
    "brokers": [{"name": "broker-a", **FAST_CHECKS}, {"name": "broker-b", **FAST_CHECKS}],
    "topics": [{"name": "T", "brokers": ["broker-a", "broker-b"]},
               {"name": "F", "brokers": ["broker-a"], "message_type": "FIFO"},
               {"name": "D", "brokers": ["broker-a", "broker-b"], "message_type": "DELAY"},
               {"name": "X", "brokers": ["broker-b"], "message_type": "TRANSACTION"}],
    # the proxies heartbeat the topics' producer groups every 2 s (5.x: 20 s), so the brokers' checks
    # reach the client seconds after its halves instead of 20 s
    "proxies": {"count": 2, "fifoGroups": ["GF"], "transactionHeartbeatPeriodSecond": 2}, "duration": "600s",
}
BODIES = ["00ff10", "68c3a9e29c93f09f9a80", "00", "e4baa4e69893e280a8c285"]  # bytes, NUL, Unicode (LS, NEL, emoji)
N = 8


def lines(proc: NodeProcess, event: str) -> list[dict[str, Any]]:
    return [x for x in proc.lines() if x.get("event") == event]


def done(proc: NodeProcess) -> bool:
    return bool(lines(proc, "done"))


def test_py5_client_sends_and_receives_through_two_proxies(tmp_path: Path, node_procs: NodeProcs) -> None:
    started = time.monotonic()
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        assert c.endpoints is not None
        p0, p1 = c.endpoints.split(";")
        common = {"request_timeout_s": 3, "bodies_hex": BODIES}
        run = lambda script, name, **cfg: node_procs.py5(script, {**common, **cfg}, name)  # noqa: E731
        consumers = {
            "T": run("simple_consumer.py", "simple", endpoints=p0, topic="T", group="GS", count=N, invisible_s=10,
                     ack_from_attempt=2, change_invisible_s=1, await_s=2, duration_s=60),
            "D": run("push_consumer.py", "push", endpoints=p1, topic="D", group="GD", count=3, duration_s=60),
            "F": run("simple_consumer.py", "fifo", endpoints=p1, topic="F", group="GF", count=5, max=2,
                     await_s=2, duration_s=60),
            "X": run("simple_consumer.py", "tx", endpoints=p0, topic="X", group="GX", count=4, await_s=2,
                     duration_s=60),
        }
        producers = {
            "normal": run("producer.py", "normal", endpoints=p0, topic="T", count=N),
            "fifo": run("producer.py", "fifo", endpoints=p1, topic="F", count=5, type="fifo",
                        message_group="order-1"),
            "delay": run("producer.py", "delay", endpoints=f"{p1};{p0}", topic="D", count=3, type="delay",
                         delay_s=1),
            "tx": run("producer.py", "tx", endpoints=p0, topic="X", count=2, type="transaction", end="commit"),
            "checked": run("producer.py", "checked", endpoints=p1, topic="X", count=2, type="transaction",
                           end="none", check_answer="commit", linger_s=40, checks=2),
        }
        for name, proc in {**producers, **consumers}.items():
            wait_for(lambda proc=proc: done(proc), 60, f"{name} done", describe=proc.describe)
        assert set(node_procs.stop_all().values()) == {0}, [p.describe() for p in node_procs.procs]
        events = {kind: c.events(kind) for kind in ("send", "consume", "proxy.ack", "proxy.tx_check", "tx.end",
                                                    "timer.deliver", "pop.lease", "node.error")}
        run_dir = c.finish()
    wall = time.monotonic() - started

    sent = {name: lines(p, "sent") for name, p in producers.items()}
    assert all(x["ok"] for xs in sent.values() for x in xs), sent
    assert not events["node.error"], events["node.error"]
    ids = {name: [x["message_id"] for x in xs] for name, xs in sent.items()}

    # the proxies wrote each client's sends under its name: one ok line per message, type and proxy
    grpc_sends = [e for e in events["send"] if e.get("mode") == "grpc"]
    assert sorted(e["msg_id"] for e in grpc_sends) == sorted(i for xs in ids.values() for i in xs)
    assert all(e["outcome"] == "ok" and e["node"].startswith("client@") for e in grpc_sends)
    assert {e["message_type"] for e in grpc_sends} == {"NORMAL", "FIFO", "DELAY", "TRANSACTION"}

    # SimpleConsumer: every message leased, its lease changed, redelivered with attempt 2 and acked,
    # the body byte for byte
    simple = consumers["T"]
    got = lines(simple, "received")
    assert sorted((x["message_id"], x["delivery_attempt"]) for x in got) == \
        sorted((i, a) for i in ids["normal"] for a in (1, 2)), got
    assert all(x["ok"] for x in lines(simple, "change_invisible")) and len(lines(simple, "change_invisible")) == N
    assert sorted(x["message_id"] for x in lines(simple, "ack") if x["ok"]) == sorted(ids["normal"])
    body_of = {x["message_id"]: x["body_hex"] for x in sent["normal"]}
    assert all(x["body_hex"] == body_of[x["message_id"]] and not x["corrupted"] for x in got)

    # FIFO: one group's messages in send order; delay: never before the delivery time
    fifo = lines(consumers["F"], "received")
    assert [x["message_id"] for x in fifo] == ids["fifo"] and {x["message_group"] for x in fifo} == {"order-1"}
    pushed = lines(consumers["D"], "consumed")
    assert sorted(x["message_id"] for x in pushed) == sorted(ids["delay"])
    due = {x["message_id"]: x["delivery_timestamp_s"] * 1000 for x in sent["delay"]}
    assert all(x["ts"] >= due[x["message_id"]] for x in pushed), (pushed, due)
    assert len(events["timer.deliver"]) == 3

    # transactions: committed first-hand and after the relayed checks, consumed once each
    checks = lines(producers["checked"], "check")
    assert sorted(x["message_id"] for x in checks) == sorted(ids["checked"])
    assert sorted(e["msg_id"] for e in events["proxy.tx_check"]) == sorted(ids["checked"])
    committed = {e["msg_id"] for e in events["tx.end"] if e["action"] == "commit" and e["result"] == "ok"}
    assert committed == set(ids["tx"]) | set(ids["checked"])
    assert sorted(x["message_id"] for x in lines(consumers["X"], "received")) == sorted(committed)

    # the report counts what the client saw
    report = document(analyse_dirs([str(run_dir)], plots_too=False)[0], ["sends", "consumption"])
    total = sum(len(xs) for xs in ids.values())
    assert (report["sends"]["ok"], report["sends"]["acked"]) == (total, total), report["sends"]
    by_topic = {row["topic"]: row for row in report["consumption"]["by_topic"]}
    assert {t: by_topic[t]["consumed"] for t in "TFDX"} == {"T": N, "F": 5, "D": 3, "X": 4}, by_topic
    assert by_topic["T"]["duplicate_deliveries"] == N  # each redelivered once, after its lease change
    print(f"py5-proxy: {total} sends, test {wall:.1f} s")
