"""Seed 000/001 from topology files alone: "No route info of this topic", the auto-create
imbalance, and the createTopicKey mismatch of an old client (real processes, events read back).
"""

from __future__ import annotations

from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.testing import read_events
from tests.integration.seeds_lib import (
    NO_ROUTE_PREFIX,
    SEED_FILES,
    acked,
    broker_topics,
    brokers_of,
    client_routes,
    ns_routes,
    sends,
    topology,
)

WAIT_S = 60


def test_every_seed_topology_validates() -> None:
    assert len(SEED_FILES) >= 5
    result = CliRunner().invoke(main, ["validate", *map(str, SEED_FILES)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": ok (") == len(SEED_FILES)


def test_no_route_info_when_auto_create_is_off_and_the_topic_is_absent(start_cluster) -> None:
    c = start_cluster(topology("seed-no-route"))
    c.wait_for(lambda: len(sends(c.run_dir, "pg-1-0")) >= 5 and len(acked(c.run_dir, "pg-2-0")) >= 5,
               WAIT_S, "no_route sends from pg-1-0 and acked sends from pg-2-0")
    attempts = sends(c.run_dir, "pg-1-0")
    for e in attempts:
        assert (e["outcome"], e["code"], e["broker"], e["attempt"]) == ("no_route", 10005, None, 1)
        assert e["error"].startswith(NO_ROUTE_PREFIX + "NewTopic\nSee http://rocketmq.apache.org/docs/faq/")
    fails = {e["msg_id"] for e in read_events(c.run_dir, "send.fail", node="pg-1-0")}
    assert {e["msg_id"] for e in attempts} <= fails
    assert not broker_topics(c.run_dir, "NewTopic")
    assert not ns_routes(c.run_dir, "NewTopic") and not ns_routes(c.run_dir, "TBW102")
    # the same cluster serves the admin-created topic without a failure
    assert all(e["outcome"] == "ok" for e in sends(c.run_dir, "pg-2-0"))
    assert not read_events(c.run_dir, "send.fail", node="pg-2-0")


def test_auto_created_topic_stays_on_the_broker_that_got_the_first_message(start_cluster) -> None:
    c = start_cluster(topology("seed-autocreate-imbalance"))
    rd = c.run_dir

    def converged_sends() -> list[dict]:
        ns_views = [r for r in client_routes(rd, "pg-1-0", "NewTopic") if r["source"] == "namesrv-0"]
        return [e for e in sends(rd, "pg-1-0", outcome="ok") if ns_views and e["ts"] > ns_views[0]["ts"]]

    c.wait_for(lambda: len(converged_sends()) >= 3, WAIT_S, "three sends after the route converged")
    created = broker_topics(rd, "NewTopic", how="auto")
    assert len(created) == 1, created
    creator = created[0]["broker"]
    other = ({"broker-a", "broker-b"} - {creator}).pop()
    assert created[0]["broker_id"] == 0 and created[0]["write_queues"] == 4  # min(4, TBW102's 8)
    # the other master could have auto-created it: it hosts TBW102 with the inherit bit
    tbw = broker_topics(rd, "TBW102", broker=other, broker_id=0)
    assert tbw and tbw[0]["perm"] & 1
    assert not broker_topics(rd, "NewTopic", broker=other)
    # the producer's first view came from TBW102 (both brokers), then the namesrv's (creator only)
    views = client_routes(rd, "pg-1-0", "NewTopic")
    assert views[0]["source"] == "TBW102" and brokers_of(views[0]["publish_queues"]) == {"broker-a", "broker-b"}
    last = views[-1]
    assert last["source"] == "namesrv-0" and brokers_of(last["publish_queues"]) == {creator}
    assert len(last["publish_queues"]) == 4
    assert [q["broker"] for q in ns_routes(rd, "NewTopic")[-1]["queue_datas"]] == [creator]
    first_send = sends(rd, "pg-1-0", outcome="ok")[0]
    assert first_send["broker"] == creator
    assert {e["broker"] for e in converged_sends()} == {creator}
    assert not read_events(rd, "send.fail")


def test_old_create_topic_key_cannot_auto_create(start_cluster) -> None:
    c = start_cluster(topology("seed-createtopickey-mismatch"))
    rd = c.run_dir
    c.wait_for(lambda: len(sends(rd, "pg-old-0")) >= 5 and len(acked(rd, "pg-new-0")) >= 5,
               WAIT_S, "sends from both producers")
    for e in sends(rd, "pg-old-0"):
        assert (e["outcome"], e["code"]) == ("no_route", 10005)
        assert e["error"].startswith(NO_ROUTE_PREFIX + "OldClientTopic")
    assert not broker_topics(rd, "OldClientTopic")
    assert not ns_routes(rd, "AUTO_CREATE_TOPIC_KEY")
    # auto-create itself works on this cluster: the producer with the TBW102 key created its topic
    assert broker_topics(rd, "NewClientTopic", how="auto")
    assert all(e["outcome"] == "ok" for e in sends(rd, "pg-new-0"))
