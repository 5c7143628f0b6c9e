"""Partitions against a real cluster, seen through the namesrvs' own events and tables.

A partition closes nothing (docs/design.md §2): a broker cut off from a namesrv is dropped only by the
120 s scan (``expired``) or the 120 s idle close of its channel (``channel_destroy``), both
scaled, and never before 120 s after the namesrv last heard from it. The lower bound is taken from
the namesrv's own liveness stamp of the broker, frozen once the cut took effect; no upper bounds.
"""

from __future__ import annotations

from tests.faults.live import EXPIRY_MS, IDLE_SLACK_MS, SCALE, dropped, fault_events, live_stamp, ns_broker


def topology(namesrvs: int) -> dict:
    return {"name": "faults-partition", "timing": {"scale": SCALE}, "namesrvs": namesrvs,
            "brokers": [{"name": "broker-a"}, {"name": "broker-b"}], "duration": "100000s"}


def test_oneway_namesrv_to_broker_cut_keeps_the_broker_registered(start_cluster) -> None:
    """The namesrv cannot reach the broker, the broker still reaches the namesrv: its
    registrations keep arriving (their replies are lost), so it is never dropped."""
    c = start_cluster(topology(1))
    p1 = c.partition("namesrv-0", from_="broker-a-0", oneway=True)
    started = fault_events(c, p1.fault_id)[0]
    assert started["params"]["links"] == [["namesrv-0", "broker-a-0"]]
    dropped_before = c.state("namesrv-0")["_runtime"]["transport"]["dropped_out"]
    # registrations keep refreshing the stamp well past two expiry periods after the cut
    c.wait_for(lambda: (live_stamp(c, "namesrv-0", "broker-a-0") or 0) > started["ts"] + 2 * EXPIRY_MS,
               60, "broker-a-0 still registering 2 x 120 s (scaled) after the cut")
    assert not dropped(c, "broker-a-0", after=started["ts"])
    assert c.state("namesrv-0")["_runtime"]["transport"]["dropped_out"] > dropped_before  # replies lost
    assert c.state("namesrv-0")["_runtime"]["transport"]["blocked_links"] == [["namesrv-0", "broker-a-0"]]


def test_oneway_broker_to_namesrv_cut_drops_the_broker_after_the_scaled_120s(start_cluster) -> None:
    c = start_cluster(topology(1))
    p1 = c.partition("broker-a-0", from_="namesrv-0", oneway=True)
    started = fault_events(c, p1.fault_id)[0]
    assert started["params"]["links"] == [["broker-a-0", "namesrv-0"]]
    last_heard = live_stamp(c, "namesrv-0", "broker-a-0")
    assert last_heard is not None, "broker-a-0 dropped before the test could read the namesrv's table"
    c.wait_for(lambda: dropped(c, "broker-a-0", after=started["ts"]), 60, "broker-a-0 to be dropped")
    first = dropped(c, "broker-a-0", after=started["ts"])[0]
    assert first["ts"] - last_heard >= EXPIRY_MS - IDLE_SLACK_MS, (first, last_heard)
    assert not dropped(c, "broker-b-0")  # the other broker was not cut
    p1.heal()
    healed = fault_events(c, p1.fault_id, "fault.end")[0]["ts"]
    c.wait_for(lambda: ns_broker(c, "broker-a-0", "register", after=healed), 60, "broker-a-0 to register again")


def test_broker_partitioned_from_every_namesrv_is_dropped_by_each_after_the_scaled_120s(start_cluster) -> None:
    c = start_cluster(topology(2))
    p1 = c.partition("broker-a-0", from_="namesrv")
    started = fault_events(c, p1.fault_id)[0]
    assert sorted(map(tuple, started["params"]["links"])) == sorted(
        [("broker-a-0", "namesrv-0"), ("broker-a-0", "namesrv-1"), ("namesrv-0", "broker-a-0"),
         ("namesrv-1", "broker-a-0")])
    namesrvs = ["namesrv-0", "namesrv-1"]
    last_heard = {ns: live_stamp(c, ns, "broker-a-0") for ns in namesrvs}
    assert None not in last_heard.values(), last_heard
    for ns in namesrvs:
        c.wait_for(lambda ns=ns: dropped(c, "broker-a-0", ns, after=started["ts"]), 60, f"broker-a-0 dropped by {ns}")
        first = dropped(c, "broker-a-0", ns, after=started["ts"])[0]
        assert first["ts"] - last_heard[ns] >= EXPIRY_MS - IDLE_SLACK_MS, (ns, first, last_heard[ns])
    assert not dropped(c, "broker-b-0")
    p1.heal()
    healed = fault_events(c, p1.fault_id, "fault.end")[0]["ts"]
    for ns in namesrvs:
        c.wait_for(lambda ns=ns: ns_broker(c, "broker-a-0", "register", ns, after=healed), 60,
                   f"broker-a-0 back on {ns}")
        assert c.state(ns)["_runtime"]["transport"]["blocked_links"] == []
