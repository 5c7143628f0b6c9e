"""Link faults and clock faults on a real cluster, seen in the producer's send latencies, the
namesrv's expiries and the nodes' ``node.clock`` events."""

from __future__ import annotations

from typing import Any

import pytest

from rmqemu.emulator.testing import read_events
from tests.faults.live import EXPIRY_MS, SCALE, fault_events, median_latency, ns_broker, sends

PRODUCER = {"name": "faults-link", "timing": {"scale": SCALE}, "namesrvs": 1, "duration": "100000s",
            "brokers": [{"name": "broker-a"}],
            "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 2}],
            # 3 s wall of send timeout (300 000 ms scaled): room for the injected delay
            "producers": [{"group": "pg-1", "topics": ["T"], "rate": 0.2, "mode": "sync",
                           "sendMsgTimeout": 300_000}]}
TWO_BROKERS = {"name": "faults-clock", "timing": {"scale": SCALE}, "namesrvs": 1, "duration": "100000s",
               "brokers": [{"name": "broker-a"}, {"name": "broker-b"}]}
SAMPLES = 10


def test_link_delay_raises_send_latency_by_the_injected_amount(start_cluster) -> None:
    c = start_cluster(PRODUCER)
    c.wait_for(lambda: len(sends(c, "pg-1-0", "ok")) >= SAMPLES, 60, f"{SAMPLES} ok sends")
    delay_ms, jitter_ms = 20_000 * SCALE, 5_000 * SCALE  # 20 s +/- 5 s cluster time
    l1 = c.link("pg-1-0", to="broker-a-0", oneway=True, delay="20s", jitter="5s")
    started = fault_events(c, l1.fault_id)[0]
    assert started["params"]["links"] == [["pg-1-0", "broker-a-0"]]
    assert started["params"]["delay_ms"] == pytest.approx(delay_ms)
    before = sends(c, "pg-1-0", "ok", before=started["ts"])
    c.wait_for(lambda: len(sends(c, "pg-1-0", "ok", after=started["ts"])) >= SAMPLES, 60,
               f"{SAMPLES} ok sends under the delay")
    during = sends(c, "pg-1-0", "ok", after=started["ts"])
    # every request waited at least delay - jitter before it left the producer
    assert min(e["latency_ms"] for e in during) >= delay_ms - jitter_ms
    increase = median_latency(during) - median_latency(before)
    assert delay_ms - jitter_ms <= increase <= delay_ms + jitter_ms + 50, (increase, before[:3], during[:3])
    l1.heal()
    healed = fault_events(c, l1.fault_id, "fault.end")[0]["ts"]
    c.wait_for(lambda: len(sends(c, "pg-1-0", "ok", after=healed)) >= 3, 60, "sends after the heal")
    assert min(e["latency_ms"] for e in sends(c, "pg-1-0", "ok", after=healed)) < delay_ms - jitter_ms


def test_link_loss_on_every_frame_makes_sends_time_out(start_cluster) -> None:
    c = start_cluster({**PRODUCER, "producers": [{**PRODUCER["producers"][0], "sendMsgTimeout": 3000}]})
    c.wait_for(lambda: sends(c, "pg-1-0", "ok"), 60, "a first ok send")
    l1 = c.link("broker-a-0", to="pg-1-0", oneway=True, loss="100%")
    started = fault_events(c, l1.fault_id)[0]["ts"]
    c.wait_for(lambda: len(sends(c, "pg-1-0", "timeout", after=started)) >= 3, 60, "sends timing out")
    assert not sends(c, "pg-1-0", "ok", after=started)  # every reply was lost


def test_strobing_namesrv_clock_expires_brokers_again_and_again(start_cluster) -> None:
    """The namesrv's clock flips between the host clock and +240 s (scaled) every 100 s (scaled):
    at each jump forward, the brokers stamped before it look 240 s silent and expire at the next
    scan (unless one re-registered between the jump and the scan: it is stamped with the jumped
    clock and survives that round, as in RocketMQ). Repeated: a broker expires more than once."""
    c = start_cluster(TWO_BROKERS)
    c1 = c.skew("namesrv-0", "+240s", period="100s")
    started = fault_events(c, c1.fault_id)[0]
    assert started["params"]["strobe_delta_ms"] == pytest.approx(2 * EXPIRY_MS)
    brokers = ["broker-a-0", "broker-b-0"]

    def expiries(b: str) -> list[dict[str, Any]]:
        return ns_broker(c, b, "expired", after=started["ts"])

    c.wait_for(lambda: any(len(expiries(b)) >= 2 for b in brokers), 60, "a broker expiring twice")
    clock = read_events(c.run_dir, "node.clock", node="namesrv-0")[-1]
    assert clock["setting"]["strobe_period_ms"] == pytest.approx(1000.0)
    c1.heal()
    healed = fault_events(c, c1.fault_id, "fault.end")[0]["ts"]
    assert read_events(c.run_dir, "node.clock", node="namesrv-0")[-1]["offset_ms"] == pytest.approx(0.0, abs=1.0)
    for b in brokers:  # back after the heal: registered and not dropped again
        c.wait_for(lambda b=b: c.addrs[b] in c.state("namesrv-0")["brokerLiveTable"], 60, f"{b} live again")
    assert healed > started["ts"]


def test_strobe_below_the_expiry_time_never_expires_a_broker(start_cluster) -> None:
    """The other side of "exactly when the jump exceeds 120 s": a strobe of +60 s (scaled).
    A broker's stamp is at most one registration period (30 s) old, so after a jump it looks
    at most 90 s silent, under the 120 s expiry: the scans must never drop it. Observed over
    at least three jumps forward, seen in the namesrv's own clock offset."""
    c = start_cluster(TWO_BROKERS)
    c1 = c.skew("namesrv-0", "+60s", period="100s")
    started = fault_events(c, c1.fault_id)[0]["ts"]
    phases: list[bool] = []  # True while the namesrv's clock is ahead

    def three_jumps_forward() -> bool:
        ahead = c.state("namesrv-0")["_runtime"]["clock_offset_ms"] > 30_000 * SCALE
        if not phases or phases[-1] != ahead:
            phases.append(ahead)
        return phases.count(True) >= 3 and phases[-1] is False

    c.wait_for(three_jumps_forward, 60, "three strobe jumps forward and back on namesrv-0")
    for b in ("broker-a-0", "broker-b-0"):
        assert not ns_broker(c, b, ("expired", "channel_destroy"), after=started), b
        assert c.addrs[b] in c.state("namesrv-0")["brokerLiveTable"]
    assert not c.died


def test_clock_bump_then_reset_on_a_broker_is_applied_and_undone(start_cluster) -> None:
    c = start_cluster(TWO_BROKERS)
    c1 = c.skew("broker-a-0", "-130s")
    bumped = read_events(c.run_dir, "node.clock", node="broker-a-0")[-1]
    assert bumped["offset_ms"] == pytest.approx(-1300.0, abs=1.0)
    assert bumped["local_ms"] == pytest.approx(bumped["ts"] - 1300.0, abs=1.0)
    c2 = c.skew("broker-a-0", "reset")
    assert read_events(c.run_dir, "node.clock", node="broker-a-0")[-1]["offset_ms"] == pytest.approx(0.0, abs=1.0)
    assert [(e["kind"], e["fault_id"]) for e in read_events(c.run_dir) if e["kind"].startswith("fault.")] == [
        ("fault.start", c1.fault_id), ("fault.end", c1.fault_id),
        ("fault.start", c2.fault_id), ("fault.end", c2.fault_id)]


def test_link_duplication_stores_each_message_twice_and_the_consumer_sees_both(start_cluster) -> None:
    topo = {**PRODUCER, "consumers": [{"group": "cg-1", "subscribe": ["T"]}]}
    c = start_cluster(topo)

    def consumed(after: float = 0.0) -> list[str]:
        return [m for e in read_events(c.run_dir, "consume", node="cg-1-0", where=lambda e: e["ts"] > after)
                for m in e["msg_ids"]]

    c.wait_for(lambda: consumed(), 60, "a first consumed message")
    assert max(consumed().count(m) for m in consumed()) == 1  # no duplicates without the fault
    l1 = c.link("pg-1-0", to="broker-a-0", oneway=True, duplicate="100%")
    started = fault_events(c, l1.fault_id)[0]["ts"]

    def sent() -> set[str]:
        return {e["msg_id"] for e in sends(c, "pg-1-0", "ok", after=started)}

    def twice() -> list[str]:
        return [m for m in sent() if consumed().count(m) >= 2]

    c.wait_for(lambda: len(twice()) >= 3, 60, "messages sent under the fault consumed twice")


def test_clock_drift_makes_the_producers_clock_run_fast(start_cluster) -> None:
    c = start_cluster(PRODUCER)
    c.wait_for(lambda: sends(c, "pg-1-0"), 60, "a first send")
    c1 = c.skew("pg-1-0", "100000ppm")  # 10 % fast
    since = fault_events(c, c1.fault_id)[0]["params"]["since_ms"]

    def late() -> list[dict[str, Any]]:
        return [e for e in read_events(c.run_dir, "send", node="pg-1-0") if e["ts"] - since > 500]

    c.wait_for(lambda: len(late()) >= 3, 60, "sends half a second into the drift")
    for e in late():  # the node's own clock: host time + 10 % of the time since the drift began
        assert e["local_ms"] - e["ts"] == pytest.approx(0.1 * (e["ts"] - since), abs=2.0)
    c1.heal()
    healed = fault_events(c, c1.fault_id, "fault.end")[0]["ts"]
    c.wait_for(lambda: [e for e in read_events(c.run_dir, "send", node="pg-1-0") if e["ts"] > healed], 60,
               "a send after")
    after = [e for e in read_events(c.run_dir, "send", node="pg-1-0") if e["ts"] > healed]
    assert abs(after[-1]["local_ms"] - after[-1]["ts"]) < 2.0
