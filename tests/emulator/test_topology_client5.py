"""Topology checks of RocketMQ 5 entries (``client: v5``, ``proxies:``): a v5 entry's extra keys are the
RocketMQ 5 client's settings in every pass of the checks, and the timing.scale warning about proxies
names real clients only (docs/design.md §5, docs/rocketmq-model.md §10.6)."""

from __future__ import annotations

from rmqemu.emulator.launcher.topology_load import parse_topology
from rmqemu.emulator.launcher.topology_proxy import proxy_warnings
from tests.emulator.test_topology import problems

TOPICS = [{"name": "T", "brokers": ["broker-a"]}]
BASE5 = {"name": "t", "brokers": [{"name": "broker-a"}], "topics": TOPICS, "proxies": {"count": 1}}
V5_PRODUCER = {"group": "pg", "topics": ["T"], "client": "v5", "requestTimeout": 5000, "maxAttempts": 2}
V5_CONSUMER = {"group": "cg", "subscribe": ["T"], "client": "v5", "invisibleDuration": 30000,
               "routeRefreshInterval": 10000}


def test_v5_settings_are_not_flagged_when_another_mistake_fails_the_file() -> None:
    bad_ref = {**BASE5, "topics": [{"name": "T", "brokers": ["broker-x"]}],
               "producers": [V5_PRODUCER], "consumers": [V5_CONSUMER]}
    found = problems(bad_ref)
    assert found and all("broker-x" in p for p in found), found  # only the real mistake
    assert parse_topology({**BASE5, "producers": [V5_PRODUCER], "consumers": [V5_CONSUMER]}, "t.yaml")


def test_a_v5_entry_is_checked_against_the_v5_keys_and_a_v4_entry_against_the_v4_keys() -> None:
    data = {**BASE5, "topics": [{"name": "T", "brokers": ["broker-x"]}],
            "producers": [{**V5_PRODUCER, "sendMsgTimeout": 3000}, {"group": "p4", "topics": ["T"],
                                                                    "requestTimeout": 5000}]}
    found = problems(data)
    assert any(p.startswith("producers[0].sendMsgTimeout") and "RocketMQ 5 client setting" in p for p in found), found
    assert any(p.startswith("producers[1].requestTimeout") for p in found), found
    assert not any(p.startswith("producers[0].requestTimeout") for p in found), found


def test_the_scale_warning_says_it_is_about_real_clients_only() -> None:
    topo = parse_topology({**BASE5, "timing": {"scale": 0.5}, "producers": [V5_PRODUCER]}, "t.yaml")
    [warning] = [w for w in proxy_warnings(topo) if "timing.scale" in w]
    assert warning == ("proxies: at timing.scale 0.5 the cluster's intervals are scaled but a real RocketMQ 5 "
                       "client's are not (route refresh 30 s, heartbeat 10 s): timing.scale 1.0 is faithful for "
                       "real clients only; emulated ones (client: v5) are scaled like every node")
    faithful = parse_topology({**BASE5, "timing": {"scale": 1.0}, "producers": [V5_PRODUCER]}, "t.yaml")
    assert not [w for w in proxy_warnings(faithful) if "timing.scale" in w]
