"""`rmqemu admin` against a live cluster: route, cluster list, topic list, topic creation, errors."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.testing import read_events

TOPO = {
    "name": "admin",
    "timing": {"scale": 0.01},
    "namesrvs": 2,
    "brokers": [{"name": "broker-a", "slaves": 1}, {"name": "broker-b", "autoCreateTopicEnable": False},
                {"name": "broker-c", "dledger": {"peers": 2}}],
    "topics": [{"name": "OrderTopic", "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "duration": "600s",
}


def admin(run_dir, *args: str):
    return CliRunner().invoke(main, ["admin", *args, "--run", str(run_dir)])


def test_admin_verbs_against_a_live_cluster(start_cluster) -> None:
    c = start_cluster(TOPO)
    out = admin(c.run_dir, "topic-route", "OrderTopic")
    assert out.exit_code == 0, out.output
    route = json.loads(out.output)
    assert [q["brokerName"] for q in route["queueDatas"]] == ["broker-a", "broker-b"]
    addrs = {b["brokerName"]: b["brokerAddrs"] for b in route["brokerDatas"]}
    assert addrs["broker-a"] == {"0": c.addrs["broker-a-0"], "1": c.addrs["broker-a-1"]}

    listing = admin(c.run_dir, "cluster-list", "--namesrv", "namesrv-1")
    assert listing.exit_code == 0
    assert f"DefaultCluster    broker-a          1     {c.addrs['broker-a-1']}" in listing.output

    created = admin(c.run_dir, "update-topic", "NewTopic", "--broker", "broker-b", "--queues", "8")
    assert created.exit_code == 0 and "created/updated on broker-b" in created.output
    assert read_events(c.run_dir, "broker.topic", node="broker-b-0",
                       where=lambda e: e["topic"] == "NewTopic" and e["how"] == "admin")[0]["write_queues"] == 8
    c.wait_for(lambda: "NewTopic" in admin(c.run_dir, "topic-list").output, 30, "NewTopic on namesrv-0")
    new_route = json.loads(admin(c.run_dir, "topic-route", "NewTopic").output)
    assert [(q["brokerName"], q["writeQueueNums"]) for q in new_route["queueDatas"]] == [("broker-b", 8)]

    missing = admin(c.run_dir, "topic-route", "Nope")
    assert missing.exit_code == 1
    assert "CODE: 17  DESC: No topic route info in name server for the topic: Nope" in missing.output
    unknown = admin(c.run_dir, "update-topic", "T", "--broker", "broker-z")
    assert unknown.exit_code == 1 and "unknown broker 'broker-z'" in unknown.output

    # a DLedger group's topic goes to the peer that is master now
    on_c = admin(c.run_dir, "update-topic", "DTopic", "--broker", "broker-c")
    assert on_c.exit_code == 0, on_c.output
    master = next(n for n in ("broker-c-n0", "broker-c-n1") if c.state(n)["broker_id"] == 0)
    assert f"created/updated on broker-c ({c.addrs[master]})" in on_c.output
    assert read_events(c.run_dir, "broker.topic", node=master, where=lambda e: e["topic"] == "DTopic")
