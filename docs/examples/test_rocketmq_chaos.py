"""Chaos tests of a small RocketMQ cluster, written against rmqemu's pytest plugin.

Copy this file into your own test suite: installing rmqemu (``pip install rmqemu[spark,test]``)
gives the ``start_cluster`` and ``rmqemu_spark`` fixtures. Run with ``pytest -n 2``: every test
owns its cluster, its ports and its processes. Durations are cluster time (RocketMQ's clock);
``timing.scale: 0.01`` runs the cluster 100 times faster than real time.
"""

from __future__ import annotations

import psutil

from rmqemu.emulator.testing import expect_metrics

CLUSTER = {
    "name": "example", "seed": 7, "timing": {"scale": 0.01}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 1}, {"name": "broker-b"}],
    "topics": [{"name": "Orders", "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "producers": [{"group": "orders-app", "topics": ["Orders"], "rate": 5}],
    "consumers": [{"group": "billing", "instances": 2, "subscribe": ["Orders"]}],
    "duration": "10m",
}


def ok_sends_since(cluster, ts):
    return [e for e in cluster.events("send") if e["ts"] > ts and e["outcome"] == "ok"]


def test_a_killed_master_comes_back_and_sends_recover(start_cluster):
    c = start_cluster(CLUSTER)
    c.wait_routed("Orders")
    kill = c.kill("broker-a-0", restart_after="40s")   # SIGKILL, restarted 40 cluster s later
    c.wait_for(lambda: not kill.active, timeout_s=60, what="broker-a-0 restarted")
    restarted = c.events("fault.end")[-1]["ts"]
    # the producer keeps sending: broker-b takes everything while broker-a is away
    c.wait_for(lambda: len(ok_sends_since(c, restarted)) >= 10, timeout_s=60, what="sends after the restart")


def test_a_paused_broker_is_resumed_when_the_block_ends(start_cluster):
    c = start_cluster(CLUSTER)
    c.wait_routed("Orders")
    with c.pause("broker-b-0"):                         # SIGSTOP, like a long GC pause
        c.sleep("30s")
        assert psutil.Process(c.pid("broker-b-0")).status() == psutil.STATUS_STOPPED
    assert psutil.Process(c.pid("broker-b-0")).status() != psutil.STATUS_STOPPED


def test_a_one_way_cut_of_a_broker_from_the_namesrv(start_cluster):
    c = start_cluster(CLUSTER)
    c.wait_routed("Orders")
    # the first group cannot reach the second: broker-a's registrations stop reaching the
    # namesrv, while the namesrv can still reach broker-a
    with c.partition("broker-a-0", from_="namesrv-0", oneway=True):
        c.sleep("150s")                                 # past the namesrv's 120 s broker expiry
        # dropped by the 120 s expiry scan or by the 120 s idle close of its channel, whichever comes first
        dropped = [e for e in c.events("ns.broker")
                   if e["broker"] == "broker-a" and e["change"] in ("expired", "channel_destroy")]
        assert dropped, "the namesrv should drop a broker whose registrations it no longer hears"


EXPECT = {"consumption.lost": 0, "misrouted.total": 0, "sends.ok": {"min": 100}}


def test_metrics_of_a_fault_free_run(start_cluster, rmqemu_spark):
    c = start_cluster(CLUSTER, duration="60s")
    c.wait_routed("Orders")
    c.sleep("60s")
    # finishes the run; Spark computes the sections of metrics.json that EXPECT names (only=:
    # leave it out for the whole document, route staleness included, at about three times the cost)
    metrics = c.metrics(rmqemu_spark, only=EXPECT)
    expect_metrics(metrics, EXPECT, c.run_dir)
