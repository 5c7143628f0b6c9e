"""NameServer: broker liveness (docs/rocketmq-model.md §1.2, 1.4, 1.5): the expiry scan, data-version
keep-alives, clock bumps and freezes, and channel closes that remove a broker."""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode
from rmqemu.emulator.roles.common.base import CloseChannel, Every
from tests.roles.test_namesrv import A0, A1, B0, d, register, route, topic  # noqa: F401  (the fixture)

EXPIRY = 120000


def test_start_schedules_the_scan(d):  # noqa: F811
    assert d.actions == [Every("scan", 5000, 10000)]


def test_expiry_strictly_greater_than(d):  # noqa: F811
    register(d, A0, "broker-a", 0, [topic("T")])
    d.time.mono_ms += EXPIRY  # exactly last + 120000 == now: kept
    assert d.timer("scan") == []
    d.time.mono_ms += 0.5
    m = d.mark()
    acts = d.timer("scan")
    assert acts[0] == CloseChannel(f"ch-{A0}")
    assert d.events(since=m) == [
        {"broker_addr": A0, "broker": "broker-a", "broker_id": 0, "change": "expired"},
        {"topic": "T", "queue_datas": [], "masters": []},
    ]
    assert d.role.state()["brokerAddrTable"] == {} and d.role.state()["clusterAddrTable"] == {}


def test_query_data_version_refreshes_stamp_when_unchanged(d):  # noqa: F811
    register(d, A0, "broker-a", 0, [topic("T")], counter=3, ts=77)
    d.time.mono_ms += 1000
    resp = d.call(RC.QUERY_DATA_VERSION, {"brokerAddr": A0, "brokerName": "broker-a", "brokerId": 0,
                                          "clusterName": "DefaultCluster"},
                  {"timestamp": 77, "counter": 3})
    assert resp.fields == {"changed": False} and resp.json_body() == {"timestamp": 77, "counter": 3}
    assert d.role.state()["brokerLiveTable"][A0]["lastUpdateTimestamp"] == d.time.wall_ms
    d.time.mono_ms += 1000
    resp = d.call(RC.QUERY_DATA_VERSION, {"brokerAddr": A0, "brokerName": "broker-a", "brokerId": 0,
                                          "clusterName": "DefaultCluster"},
                  {"timestamp": 78, "counter": 4})
    assert resp.fields == {"changed": True}
    assert d.role.state()["brokerLiveTable"][A0]["lastUpdateTimestamp"] == d.time.wall_ms - 1000


def test_forward_clock_bump_expires_all_at_next_scan(d):  # noqa: F811
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, B0, "broker-b", 0, [topic("T")])
    m = d.mark()
    d.advance(5000)  # first scan at 5 s: nothing expires
    assert d.events(since=m) == []
    d.time.bump(EXPIRY + 1)
    m = d.mark()
    d.advance(10000)  # the next scan
    assert sorted(e["broker_addr"] for e in d.events("ns.broker", since=m)) == [A0, B0]
    assert {e["change"] for e in d.events("ns.broker", since=m)} == {"expired"}
    assert d.role.state()["topicQueueTable"] == {}


def test_channel_destroy_master_only_keeps_queue_data(d):  # noqa: F811
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, A1, "broker-a", 1, [])
    m = d.mark()
    d.channel("closed", f"ch-{A0}")
    assert d.events(since=m) == [
        {"broker_addr": A0, "broker": "broker-a", "broker_id": 0, "change": "channel_destroy"},
        {"topic": "T", "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}], "masters": []},
    ]
    body = route(d, "T").json_body()
    assert body["brokerDatas"][0]["brokerAddrs"] == {"1": A1} and len(body["queueDatas"]) == 1
    m = d.mark()
    d.channel("idle", f"ch-{A1}")
    assert d.events(since=m) == [
        {"broker_addr": A1, "broker": "broker-a", "broker_id": 1, "change": "channel_destroy"},
        {"topic": "T", "queue_datas": [], "masters": []},
    ]
    assert route(d, "T").code == ResponseCode.TOPIC_NOT_EXIST


def test_channel_replaced_by_new_register(d):  # noqa: F811
    register(d, A0, "broker-a", 0, [topic("T")], channel="old")
    register(d, A0, "broker-a", 0, [topic("T")], channel="new")
    m = d.mark()
    assert d.channel("closed", "old") == []  # no live entry holds it any more
    d.channel("closed", "client-channel")
    assert d.events(since=m) == []
    assert A0 in d.role.state()["brokerLiveTable"]
    d.channel("closed", "new")
    assert A0 not in d.role.state()["brokerLiveTable"]


def test_a_frozen_namesrv_scans_once_when_it_wakes(d):  # noqa: F811
    """The Driver runs the node runtime: after a freeze (SIGSTOP) longer than many scan periods,
    the scan runs once and the schedule moves on, it does not catch up run by run."""
    scans: list[float] = []
    on_timer = d.role.on_timer
    d.role.on_timer = lambda name, now: scans.append(now.mono_ms) or on_timer(name, now)  # type: ignore[method-assign]
    d.advance(5000)
    d.time.mono_ms += 100_000  # frozen for ten periods
    d.advance(0)
    assert scans == [5000, 105_000] and d.timers["scan"].due == 115_000
