"""A DLedger broker group launched for real (topologies/dledger-quickstart.yaml): broker-a's three
peers beside broker-b's master and slave, a producer group and a consumer group.

Each peer is a process of its own; the peers elect one master, which is the one registered as
brokerId 0 on the namesrv (the followers as ``int(selfId[1:]) + 1``), the one the launcher
created the topology's topic on, and the one ``Launcher.dledger_leader`` names. Messages sent to
broker-a are consumed, the end-of-run drain reads the group's master and completes, and every
node exits cleanly, leaving no process behind.
"""

from __future__ import annotations

import json
from pathlib import Path

from rmqemu.emulator.testing import process_alive, read_events, run_processes
from tests.eventdoc import contract_problems
from tests.integration.seeds_lib import acked, consumed

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "dledger-quickstart.yaml"
PEERS = ["broker-a-n0", "broker-a-n1", "broker-a-n2"]
WAIT_S = 60


def test_a_dledger_group_elects_one_master_that_gets_the_topics_and_the_run_ends_cleanly(start_cluster) -> None:
    c = start_cluster(TOPOLOGY)
    nodes = json.loads((c.run_dir / "manifest.json").read_text())["nodes"]
    assert [(nodes[n]["broker"], nodes[n]["peer"], nodes[n].get("broker_id")) for n in PEERS] == [
        ("broker-a", "n0", None), ("broker-a", "n1", None), ("broker-a", "n2", None)]
    pids = [nodes[n]["pid"] for n in nodes]
    assert len(set(pids)) == len(nodes) == 8  # every node, each peer included, is a process of its own
    assert all(process_alive(nodes[n]["pid"], nodes[n]["create_time"]) for n in PEERS)

    by_addr = {c.addrs[n]: n for n in PEERS}

    def registered() -> dict[str, str]:
        """broker-a's brokerId -> peer node, as namesrv-0 has them."""
        table = c.state("namesrv-0")["brokerAddrTable"].get("broker-a", {}).get("brokerAddrs", {})
        return {bid: by_addr.get(addr, addr) for bid, addr in table.items()}

    c.wait_for(lambda: "0" in registered() and sorted(registered().values()) == PEERS, WAIT_S,
               "broker-a's three peers registered on namesrv-0, one of them as brokerId 0")
    ids = registered()
    master = ids["0"]
    followers = {n: bid for bid, n in ids.items() if bid != "0"}
    assert followers == {n: str(int(n.rsplit("-n", 1)[1]) + 1) for n in PEERS if n != master}, ids
    assert c.state(master)["broker_id"] == 0
    assert all(c.state(n)["broker_id"] == int(bid) for n, bid in followers.items())
    assert c.launcher.dledger_leader("broker-a") == master
    assert c.state(master)["dledger"]["role"] == "LEADER"
    assert "OrderTopic" in c.state(master)["topics"]["topicConfigTable"]  # created there by the launcher
    assert "OrderTopic" in c.state("broker-b-0")["topics"]["topicConfigTable"]

    c.wait_for(lambda: sum(1 for e in acked(c.run_dir).values() if e["broker"] == "broker-a") >= 5, WAIT_S,
               "five messages acked by broker-a's master")
    c.wait_for(lambda: len(consumed(c.run_dir, "cg-1")) >= 10, WAIT_S, "ten messages consumed")

    c.finish()
    (drained,) = read_events(c.run_dir, "run.drain")
    assert drained["completed"] and not drained["unreadable"], drained  # the drain found broker-a's master
    assert not c.launcher.died
    c.check_role_errors()
    exits = {e["node"]: e for e in read_events(c.run_dir, "node.exit")}
    assert sorted(exits) == sorted(nodes) and all(e.get("code") == 0 for e in exits.values()), exits
    assert not any(process_alive(*p) for p in run_processes(c.run_dir))
    assert contract_problems(c.run_dir) == []
