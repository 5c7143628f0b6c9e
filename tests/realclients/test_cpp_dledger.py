"""The C++ client (rocketmq-client-cpp 2.1.0 through PyPI's rocketmq-python-cvs:
tests/realclients/pyclient.py) through a DLedger failover: a producer sending synchronously while
the leader of broker-a, a DLedger group (tests/realclients/failover.py), is killed and restarted
once another peer is master; a consumer of a new group reading everything afterwards.

The C++ producer polls its routes every 30 s from its start (not configurable through its C API).
Until then it keeps the route that names the old master (held here by cutting it off the namesrv:
failover.py says why): its attempts at broker-a fail, refused while the old master is dead and
answered SERVICE_NOT_AVAILABLE (14) once it is back as a slave, and ``sendDefaultImpl`` retries
each on a queue of broker-b; after the poll its sends to broker-a go to the new master. The
report's failover section counts the misrouted attempts the old master answered and the
producer's stale route. What this client allows to see: its send results carry no broker, so the
attempts are read from the brokers' events (those that reached one) and from its log (``send
failed of times``); the bodies are the hostile set of the ali-ons tests without NUL bytes, which
its C API cannot hand back (tests/realclients/cpp/normal.py).
The new master writes a ``send`` line for each send it acked, though it answers from the callback
of a follower's reply that completed the quorum (docs/real-clients.md).
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rmqemu import emulator
from tests.realclients.drivers import NodeProcess, NodeProcs, wait_exit, wait_for, wait_for_line
from tests.realclients.failover import (
    SEND_TIMEOUT_MS,
    TOPIC,
    TOPOLOGY,
    assert_report_shows,
    cut_from_namesrvs,
    failover_report,
    first_event,
    group_routes,
    kill_leader,
    node_events,
    restart_old,
    throttled,
    wait_topic_on_every_peer,
)
from tests.realclients.test_alions_cluster import BODIES

pytestmark = pytest.mark.integration

CPP_BODIES = [b.replace(b"\0", b"") for b in BODIES]  # one over 4 KiB: the client deflates it (sysFlag bit 0)
ROUTE_POLL_S = 30.0  # MQClientFactory's updateTopicRouteInfo timer
ROUTE_TIMEOUT_S = 5.0  # its GET_ROUTEINFO_BY_TOPIC timeout
MISROUTED_WANTED = 3  # attempts the restarted old master answers before the producer's route is let go
SEND_FAILED = re.compile(rb"send failed of times:\d+,brokerName:(\S+?)\[")


def sent(producer: NodeProcess) -> list[dict[str, Any]]:
    return [line for line in producer.lines() if line.get("action") == "sent"]


def consumed(consumer: NodeProcess) -> list[dict[str, Any]]:
    return [line for line in consumer.lines() if line.get("action") == "consumed"]


def client_log(proc: NodeProcess) -> bytes:
    """The C++ library's own log of ``proc`` (``$ROCKETMQ_CLIENT_LOG_DIR``: drivers.start_cpp)."""
    assert proc.home is not None
    return b"".join(p.read_bytes() for p in sorted((proc.home / "logs").glob("*")))


def test_cpp_producer_sends_through_a_leader_kill_and_a_new_consumer_reads_every_acked_message(
        tmp_path: Path, node_procs: NodeProcs) -> None:
    started = time.monotonic()
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        common = {"nameSrv": c.namesrv_addr, "topic": TOPIC}
        producer = node_procs.cpp({"role": "producer", "group": "PG_CPP_DLEDGER", "interval_ms": 100,
                                   "bodies": [base64.b64encode(b).decode() for b in CPP_BODIES], **common},
                                  "producer", "normal.py")
        client = f"client@{producer.pid}"
        wait_for_line(producer, lambda line: line.get("ready"), 60, "the producer started")
        wait_topic_on_every_peer(c)
        c.wait_for(lambda: client in c.real_clients(), 30, f"{client} connected")
        leader = c.launcher.dledger_leader("broker-a") or ""
        assert sum(n for q, n in c.state(leader)["queues"].items() if q.startswith(f"{TOPIC}:")), \
            "nothing stored on broker-a's master before the kill"

        cut = cut_from_namesrvs(c, client)
        kill, f = kill_leader(c)
        assert f.old == leader and f.new_remoting != f.old_remoting, f.describe()
        restart_old(c, kill, f)

        def misrouted() -> list[dict[str, Any]]:
            return [e for e in node_events(c, f.old, "send") if e["node"] == client and e["ts"] > f.killed_ms]
        c.wait_for(throttled(lambda: len(misrouted()) >= MISROUTED_WANTED), 60,
                   "the old master answering the producer's sends")
        cut.heal()
        healed_ms = first_event(c, "the cut healed", lambda e: e["fault_id"] == cut.fault_id, "fault.end")["ts"]

        def route_after_heal() -> list[dict[str, Any]]:
            return [e for e in group_routes(c, client) if e["ts"] > healed_ms]
        c.wait_for(throttled(route_after_heal), ROUTE_POLL_S + ROUTE_TIMEOUT_S + 5, "the producer's next route poll")
        found_ms = route_after_heal()[0]["ts"]
        wait_for(lambda: sum(s["ok"] and s["born"] > found_ms for s in sent(producer)) >= 20, 30,
                 "20 sends acked after the route poll", describe=producer.describe)
        producer.stdin.close()  # type: ignore[union-attr]
        assert wait_exit(producer, 30) == 0, producer.describe()

        acked = {s["msgId"]: s for s in sent(producer) if s["ok"]}
        consumer = node_procs.cpp({"role": "consumer", "group": "CG_CPP_DLEDGER", **common}, "consumer", "normal.py")
        wait_for(lambda: set(acked) <= {x["msgId"] for x in consumed(consumer)}, 60, "every acked message consumed",
                 describe=consumer.describe)
        node_procs.stop_all()
        old_wire = misrouted()
        on_b = {e["msg_id"] for e in node_events(c, "broker-b-0", "send")
                if e["node"] == client and e["outcome"] == "ok"}
        from_new = {m for e in node_events(c, f.new, "consume") if e["node"] == f"client@{consumer.pid}"
                    for m in e["msg_ids"]}
        new_wire = [e for e in node_events(c, f.new, "send") if e["node"] == client and e["outcome"] == "ok"]
        polls = group_routes(c, client)
        run_dir = c.finish()
    print(f"cpp-dledger: {f.describe()}; test {time.monotonic() - started:.1f} s")

    sends = sent(producer)
    # every send acked in the end: sendDefaultImpl retried a failed attempt on broker-b
    assert all(s["ok"] for s in sends), [s for s in sends if not s["ok"]]

    # the old master's side: after its restart, as a slave, it answered the producer's attempts 14
    # (or 1, busy, in the moment before its first role change), each written under the client's
    # name with its address; while it was dead nothing reached it; once the producer's route named
    # the new master (plus a send's timeout for an attempt begun before), nothing more came
    assert all(e["broker_addr"] == f.old_bus and e["outcome"] == "error" for e in old_wire), old_wire
    assert {e["code"] for e in old_wire} <= {14, 1} and Counter(e["code"] for e in old_wire)[14] >= 1, old_wire
    assert all(f.restarted_ms < e["ts"] < found_ms + SEND_TIMEOUT_MS for e in old_wire), old_wire
    # the client's side: its log has each failed attempt at broker-a, those refused by the dead old
    # master (the connection to its address erased) and those answered 14
    log = client_log(producer)
    failed_at = Counter(m.group(1).decode() for m in SEND_FAILED.finditer(log))
    refused = log.count(f"erase:{f.old_remoting} from tcpMap".encode())
    assert failed_at["broker-a"] >= len(old_wire) + 1 and refused >= 1, (failed_at, refused)

    # its route: nothing answered while it was cut off; the first answer after, from its 30 s poll,
    # came once the new master had registered
    assert not [p for p in polls if f.killed_ms < p["ts"] < healed_ms], polls
    assert f.master_ms < found_ms

    # every acked message consumed by the new group, byte for byte; stored twice (two msgIds: the
    # client draws a new UNIQ_KEY for each attempt) only a send in flight when the old master died
    rows: dict[str, list[dict[str, Any]]] = {}
    for x in consumed(consumer):
        rows.setdefault(x["msgId"], []).append(x)
    digest = {hashlib.sha256(b).hexdigest(): b for b in CPP_BODIES}
    bad = {m: [x["body_b64"] for x in rows[m] if base64.b64decode(x["body_b64"]) != digest[s["sha256"]]]
           for m, s in acked.items()}
    assert not any(bad.values()), {m: v for m, v in bad.items() if v}
    keys = Counter(x[0]["keys"] for x in rows.values())
    in_flight = {s["key"] for s in sends if s["born"] <= f.killed_ms <= s["ts"]}
    stored_twice = {k for k, n in keys.items() if n > 1}
    assert stored_twice <= in_flight, (stored_twice, in_flight)

    # after the poll, the sends not stored on broker-b were stored on broker-a by the new master:
    # the consumer was served them there
    to_a = {m for m, s in acked.items() if s["born"] > found_ms} - on_b
    assert to_a and to_a <= from_new, (len(to_a), len(to_a - from_new))
    first_new = min(acked[m]["ts"] for m in to_a)
    print(f"cpp-dledger: {len(sends)} sends; failed attempts by broker {dict(failed_at)}, {refused} refused "
          f"connections to the old master, {Counter(e['code'] for e in old_wire)} answered by it; first ack at "
          f"the new master {(first_new - f.killed_ms) / 1000:.1f} s after the kill, "
          f"{(min(acked[m]['born'] for m in to_a) - found_ms):.0f} ms after the route that named it; "
          f"{len(stored_twice)} stored twice, {sum(len(v) - 1 for v in rows.values())} redelivered")

    # the report's failover section: the failover, the old master's answers to the producer, its route
    assert_report_shows(failover_report(run_dir), f, client, Counter(e["code"] for e in old_wire), found_ms)

    # and the new master's own lines for each of them
    recorded = {e["msg_id"] for e in new_wire if e["broker_addr"] == f.new_bus}
    assert to_a <= recorded, f"{len(to_a)} sends acked by {f.new}, {len(to_a & recorded)} written as its send lines"
