"""ali-ons, a real RocketMQ 4.x client, through a DLedger failover: a producer and a push consumer
against a cluster whose broker-a is a DLedger group (tests/realclients/failover.py), the group's
leader killed mid-run and restarted once another peer is master.

The producer keeps the route that names the old master until its route poll (held here by cutting
it off the namesrv, failover.py says why): its attempts at the old master's address are refused
while it is dead and answered SERVICE_NOT_AVAILABLE (14) once it is back as a slave, each retried
on broker-b; after the poll its attempts at broker-a go to the new master, another address. Every
acked message is consumed byte for byte; the old master's events hold each misrouted attempt that
reached it, and the report's failover section counts them and the producer's stale route.

The new master writes a ``send`` line for each send it acked, though it answers from the callback
of a follower's reply that completed the quorum (docs/real-clients.md).
"""

from __future__ import annotations

import base64
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
    wait_topic_on_every_peer,
)
from tests.realclients.test_alions_cluster import BODIES, FAST, as_sent, sha

pytestmark = pytest.mark.integration

#: The producer's intervals: FAST's, its route poll included (once the cut is healed, the poll
#: that finds the new master comes within a second, or after the 3 s timeout of one in flight).
PRODUCER = {**FAST, "interval_ms": 100, "keys": True, "trace_attempts": True}
MISROUTED_WANTED = 3  # attempts the restarted old master answers before the producer's route is let go


def attempts(producer: NodeProcess) -> list[dict[str, Any]]:
    """Each attempt of each send (produce.js ``trace_attempts``), in the order they ended."""
    return [line for line in producer.lines() if "attempt" in line]


def results(producer: NodeProcess) -> list[dict[str, Any]]:
    """What each ``producer.send()`` returned or threw, in send order."""
    return [line for line in producer.lines() if "i" in line and "attempt" not in line]


def test_alions_keeps_sending_through_a_leader_kill_and_finds_the_new_master_after_its_route_poll(
        tmp_path: Path, node_procs: NodeProcs) -> None:
    started = time.monotonic()
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        common = {"nameSrv": c.namesrv_addr, "topic": TOPIC}
        consumer = node_procs.consumer({**common, "consumerGroup": "CG_DLEDGER", **FAST})
        wait_for_line(consumer, lambda line: len(line.get("assigned") or []) == 8, 60, "all 8 queues assigned")
        producer = node_procs.producer({**common, "producerGroup": "PG_DLEDGER", "count": 100000,
                                        "bodies": [base64.b64encode(b).decode() for b in BODIES], **PRODUCER})
        client = f"client@{producer.pid}"
        wait_topic_on_every_peer(c)
        c.wait_for(lambda: client in c.real_clients(), 30, f"{client} connected")
        old_master = c.launcher.remoting_addrs[c.launcher.dledger_leader("broker-a") or ""]
        wait_for(lambda: any(a["ok"] and a["addr"] == old_master for a in attempts(producer)), 30,
                 "a send acked by broker-a's master", describe=producer.describe)

        cut = cut_from_namesrvs(c, client)
        kill, f = kill_leader(c)
        assert f.old_remoting == old_master and f.new_remoting != old_master, f.describe()
        restart_old(c, kill, f)

        def misrouted() -> list[dict[str, Any]]:
            return [a for a in attempts(producer) if a["addr"] == f.old_remoting and a["born"] > f.slave_ms]
        wait_for(lambda: len(misrouted()) >= MISROUTED_WANTED, 60, "the old master answering the producer's sends",
                 describe=producer.describe)
        cut.heal()
        healed_ms = first_event(c, "the cut healed", lambda e: e["fault_id"] == cut.fault_id, "fault.end")["ts"]
        wait_for(lambda: sum(a["ok"] and a["addr"] == f.new_remoting for a in attempts(producer)) >= 10, 60,
                 "10 sends acked by the new master", describe=producer.describe)
        producer.stdin.close()  # type: ignore[union-attr]  # produce.js stops after the send in flight
        assert wait_exit(producer, 30) == 0, producer.describe()

        sent = {r["msgId"]: r for r in results(producer) if r["ok"]}
        wait_for(lambda: set(sent) <= {line["msgId"] for line in consumer.lines() if line.get("action") == "consumed"},
                 120, "every acked message consumed", describe=consumer.describe)
        node_procs.stop_all()
        wire = {node: [e for e in node_events(c, node, "send") if e["node"] == client]
                for node in (f.old, f.new)}
        polls = group_routes(c, client)
        run_dir = c.finish()
    print(f"alions-dledger: {f.describe()}; test {time.monotonic() - started:.1f} s")

    tried, sends = attempts(producer), results(producer)
    # every send was acked in the end: an attempt at broker-a that failed was retried on broker-b
    assert all(s["ok"] for s in sends), [s for s in sends if not s["ok"]]
    at_old = [a for a in tried if a["addr"] == f.old_remoting and a["born"] >= f.killed_ms]
    refused = [a for a in at_old if a["code"] is None]
    answered = [a for a in at_old if a["code"] is not None]
    # at the old master's address after the kill, never acked: refused while it was dead (no answer,
    # no code; none once it was back and registered), then answered by the old master come back as
    # a slave: 14, or 1 (busy) in the moment before its first role change
    assert not any(a["ok"] for a in at_old), [a for a in at_old if a["ok"]]
    assert refused and all(a["born"] < f.slave_ms for a in refused), refused
    assert all(a["ts"] > f.restarted_ms for a in answered), answered
    assert {a["code"] for a in answered} <= {14, 1} and Counter(a["code"] for a in answered)[14] >= 1, answered
    # each failed attempt's send was retried: a later attempt of the same send was acked
    last = {a["i"]: a for a in tried}
    assert all(last[a["i"]]["ok"] and last[a["i"]]["attempt"] > a["attempt"] for a in at_old)

    # its route: the namesrv answered it nothing while it was cut off; its first answer after the cut
    # named the new master (registered before), and from then on it sent broker-a's messages there
    after = [p for p in polls if p["ts"] > healed_ms]
    assert after and not [p for p in polls if f.killed_ms < p["ts"] < healed_ms], polls
    found_ms = after[0]["ts"]
    assert f.master_ms < found_ms
    at_new = [a for a in tried if a["addr"] == f.new_remoting]
    assert at_new and min(a["born"] for a in at_new) > found_ms, (found_ms, at_new[:3])
    assert all(a["ok"] for a in at_new), [a for a in at_new if not a["ok"]]
    assert not [a for a in at_old if a["born"] > found_ms + SEND_TIMEOUT_MS]

    # every acked message consumed, byte for byte (ali-ons deflates a body of 4 KiB or more in place,
    # and a retried attempt sends it deflated again: test_alions_cluster.as_sent)
    by_digest = {sha(b): b for b in BODIES}
    got: dict[str, list[dict[str, Any]]] = {}
    for line in consumer.lines():
        if line.get("action") == "consumed":
            got.setdefault(line["msgId"], []).append(line)
    how = {m: {as_sent(base64.b64decode(x["body_b64"]), by_digest[s["sha256"]]) for x in got[m]}
           for m, s in sent.items()}
    assert all(None not in kinds for kinds in how.values()), {m: k for m, k in how.items() if None in k}
    failed_sends = {a["i"] for a in tried if not a["ok"]}
    deflated = {sent[m]["i"] for m, kinds in how.items() if "deflated once more" in kinds}
    assert deflated <= failed_sends, deflated - failed_sends
    # stored twice (two msgIds, one key): only a send that had a failed attempt; delivered twice
    # (one msgId): the consumer's offsets of broker-a as the new master had them
    keys = Counter(x["properties"].get("KEYS") for rows in got.values() for x in rows[:1])
    stored_twice = {k for k, n in keys.items() if n > 1}
    assert {int(k.rsplit("-", 1)[1]) for k in stored_twice} <= failed_sends, stored_twice
    redelivered = sum(len(rows) - 1 for rows in got.values())
    print(f"alions-dledger: {len(sends)} sends, {len(tried)} attempts; at the old master {len(refused)} refused "
          f"{dict(Counter(a.get('error_code') for a in refused))}, "
          f"{Counter(a['code'] for a in answered)} answered; first ack at the new master "
          f"{(min(a['ts'] for a in at_new if a['ok']) - f.killed_ms) / 1000:.1f} s after the kill, "
          f"{(min(a['born'] for a in at_new) - found_ms):.0f} ms after the route that named it; "
          f"{len(stored_twice)} stored twice, {redelivered} redelivered, {len(deflated)} deflated once more")

    # the brokers' side: the old master, back as a slave, wrote each attempt it answered under the
    # client's name, with its address and the code the client got; the dead one wrote nothing
    old_wire = [e for e in wire[f.old] if e["ts"] > f.killed_ms]
    assert all(e["broker_addr"] == f.old_bus and e["outcome"] == "error" for e in old_wire), old_wire
    assert Counter(e["code"] for e in old_wire) == Counter(a["code"] for a in answered), (old_wire, answered)
    assert all(e["ts"] > f.restarted_ms for e in old_wire)
    # and the report's failover section says so
    assert_report_shows(failover_report(run_dir), f, client, Counter(e["code"] for e in old_wire), found_ms)
    # and the new master wrote a send line for each send it acked
    acked_new = Counter(a["msgId"] for a in at_new)
    recorded = Counter(e["msg_id"] for e in wire[f.new] if e["outcome"] == "ok" and e["broker_addr"] == f.new_bus)
    assert recorded == acked_new, f"{sum(acked_new.values())} acked by {f.new}, {sum(recorded.values())} written"
