"""What the real-client tests of a DLedger failover share (test_alions_dledger.py,
test_cpp_dledger.py; docs/real-clients.md, "DLedger groups"): the cluster, the waits around a
leader kill, and reading what each node wrote.

The cluster is topologies/real-clients-dledger.yaml: broker-a, a DLedger group of three peers
(broker-a-n0..n2, docs/rocketmq-model.md §8), beside broker-b, a classic master, with the topic on
both, remoting on, in real time (real clients live in wall time). A producer whose attempt at
broker-a fails retries on broker-b (both clients pick another broker for a retry), so it keeps
sending through the failover.

A client learns of a new master from its next route poll. When that poll comes is the client's
own clock (ali-ons: ``pollNameServerInteval``; the C++ client: every 30 s from its start, not
configurable), while the election takes as long as it takes, so a test that let the two race
would pass or fail by timing. These tests hold the producer's route instead: they cut the
producer off every namesrv (``Cluster.partition``) before the kill, so its route stays the one
naming the old master whatever the election's length, and heal the cut once the old master is
back as a slave and has answered the producer's misrouted sends; the producer's next poll then
finds the new master.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rmqemu import emulator, jsonlines
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "real-clients-dledger.yaml"
TOPIC, GROUP = "RealTopic", "broker-a"
PEERS = tuple(f"{GROUP}-n{i}" for i in range(3))
#: The new master's election, bounded. dledger 0.2.6's takes about 7 s here (3 missed 2 s
#: heartbeats, then a ballot or two), but this emulator's peers draw the same random vote delays
#: (each member's RNG is seeded with the topology's seed alone), so the two candidates left split
#: their votes term after term until the host's scheduling parts them: 5 to 142 s (211 terms)
#: were seen. The bound allows for that; the test's wall time does not.
ELECTION_TIMEOUT_S = 300.0
#: How long an attempt the client began before its route changed may still reach the old master:
#: a send's timeout (3 s for both clients).
SEND_TIMEOUT_MS = 3000.0


def throttled(fn: Callable[[], Any], every_s: float = 0.25) -> Callable[[], Any]:
    """``fn`` evaluated at most every ``every_s`` (falsy in between): ``Cluster.wait_for`` polls every
    20 ms, and reading a run's event files that often would take a core of this 2-core host."""
    last = [0.0]

    def check() -> Any:
        now = time.monotonic()
        if now - last[0] < every_s:
            return None
        last[0] = now
        return fn()
    return check


def node_events(c: emulator.Cluster, node: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The events ``node`` wrote so far (its ``events/<node>.jsonl``; a real client's lines are in
    the file of the namesrv or broker that answered it), of ``kind`` if given."""
    path: Path = c.run_dir / "events" / f"{node}.jsonl"
    if not path.exists():
        return []
    return [e for e in jsonlines.records(path) if kind is None or e.get("kind") == kind]


def group_routes(c: emulator.Cluster, client: str) -> list[dict[str, Any]]:
    """The routes the namesrv answered ``client`` of every topic on the group, in order (its
    ``client.route`` lines that have a queue of broker-a). A client keeps one broker address table
    for all its topics, filled from each route it is answered: a route of any topic on the group
    gives it the group's master, and its sends of every topic go there (the C++ client polls the
    default topic TBW102 too, and between two polls of the topic its answer can come first). The
    report's failover views count the same lines (docs/design.md §7 "DLedger failovers")."""
    def on_group(e: dict[str, Any]) -> bool:
        return any(q["broker"] == GROUP for q in (e.get("publish_queues") or []) + (e.get("subscribe_queues") or []))
    return [e for e in node_events(c, "namesrv-0", "client.route") if e["node"] == client and on_group(e)]


def wait_topic_on_every_peer(c: emulator.Cluster, timeout_s: float = 60.0) -> None:
    """Until every peer of the group holds the topic's config. The launcher creates it on the
    group's master; the others copy it by slave sync, as 4.9.4's do: every 10 s from 3 s after they
    became slaves, from the master address their first periodic registration (10 s after start)
    answered them, so about 14 s after start. A master killed before then leaves a new master
    without the topic, which auto-creates it at the first send (autoCreateTopicEnable): a cluster
    younger than any that has run a while."""
    def synced() -> bool:
        return all(TOPIC in c.state(p)["topics"]["topicConfigTable"] for p in PEERS)
    c.wait_for(throttled(synced), timeout_s, f"every peer of {GROUP} holding {TOPIC}")


def first_event(c: emulator.Cluster, what: str, pred: Callable[[dict[str, Any]], bool], kind: str,
                node: str | None = None, timeout_s: float = 30.0) -> dict[str, Any]:
    """The first event of ``kind`` (of ``node``, if given) ``pred`` accepts, waiting for it."""
    def find() -> dict[str, Any] | None:
        return next((e for e in c.events(kind, node=node) if pred(e)), None)
    c.wait_for(throttled(find), timeout_s, what)
    found = find()
    assert found is not None
    return found


def cut_from_namesrvs(c: emulator.Cluster, client: str) -> emulator.FaultHandle:
    """Cut ``client`` off every namesrv: its route polls go unanswered and it keeps the route it has."""
    return c.partition(client, from_=c.nodes("namesrv"))


@dataclass
class Failover:
    """One leader kill: the peer killed (``old``), the peer elected after it (``new``), their bus
    addresses (``send`` events' ``broker_addr``) and remoting addresses (what a real client is
    given), and when each step happened (host wall ms, the events' clock)."""

    old: str
    new: str
    old_bus: str
    new_bus: str
    old_remoting: str
    new_remoting: str
    killed_ms: float
    stopped_ms: float  # the old leader stopped leading: its node.exit, or the kill's start if earlier
    master_ms: float  # the namesrv took the new master's registration as brokerId 0
    restarted_ms: float | None = None  # the old leader started again
    slave_ms: float | None = None  # the namesrv took its registration as a slave

    def describe(self) -> str:
        s = lambda v: "-" if v is None else f"{(v - self.killed_ms) / 1000:.1f} s"  # noqa: E731
        return (f"{self.old} ({self.old_remoting}) killed; {self.new} ({self.new_remoting}) master after "
                f"{s(self.master_ms)}; old restarted after {s(self.restarted_ms)}, a slave after {s(self.slave_ms)}")


def kill_leader(c: emulator.Cluster) -> tuple[emulator.FaultHandle, Failover]:
    """Kill the group's leader (the ``leader:broker-a`` target, bound when the fault starts: its
    ``fault.start`` names the peer hit), wait until another peer is elected and registered as
    brokerId 0 on the namesrv (bounded by ELECTION_TIMEOUT_S); the kill's handle, still active (the
    old leader stays down until it is healed)."""
    kill = c.kill(f"leader:{GROUP}")
    (old,) = kill.targets
    killed_ms = first_event(c, "the kill recorded", lambda e: e["fault_id"] == kill.fault_id, "fault.start")["ts"]
    exited_ms = first_event(c, f"{old}'s exit recorded", lambda e: e.get("signal") == 9, "node.exit", old)["ts"]
    bus = {p: c.addrs[p] for p in PEERS}

    def registered() -> dict[str, Any] | None:
        return next((e for e in node_events(c, "namesrv-0", "ns.broker")
                     if e["ts"] > killed_ms and e["broker_id"] == 0 and e["broker"] == GROUP
                     and e["change"] in ("register", "role") and e["broker_addr"] != bus[old]), None)
    c.wait_for(throttled(registered), ELECTION_TIMEOUT_S, f"a new master of {GROUP} registered after {old} was killed")
    event = registered()
    assert event is not None
    (new,) = [p for p in PEERS if bus[p] == event["broker_addr"]]
    remoting = c.launcher.remoting_addrs
    return kill, Failover(old, new, bus[old], bus[new], remoting[old], remoting[new], killed_ms,
                          min(killed_ms, exited_ms), event["ts"])


def restart_old(c: emulator.Cluster, kill: emulator.FaultHandle, f: Failover) -> None:
    """Heal the kill (the old leader starts again, on its old ports) and wait until the namesrv has
    it as a slave of the new master: a follower's brokerId, at its old address."""
    kill.heal()
    f.restarted_ms = first_event(c, f"{f.old} started again", lambda e: e["ts"] > f.killed_ms, "node.start",
                                 f.old)["ts"]

    def as_slave() -> dict[str, Any] | None:
        return next((e for e in node_events(c, "namesrv-0", "ns.broker") if e["ts"] > f.killed_ms
                     and e["broker_addr"] == f.old_bus and e["broker_id"] not in (0, None)
                     and e["change"] in ("register", "role")), None)
    c.wait_for(throttled(as_slave), 60, f"{f.old} registered as a slave after its restart")
    event = as_slave()
    assert event is not None
    f.slave_ms = event["ts"]


def failover_report(run_dir: Path) -> dict[str, Any]:
    """The finished run's metrics.json sections ``failover`` and ``misrouted``, analysed in this
    process (the core tasks the Spark job runs, without a JVM)."""
    return document(analyse_dirs([str(run_dir)], plots_too=False)[0], ["failover", "misrouted"])


def assert_report_shows(doc: dict[str, Any], f: Failover, client: str, answered: Counter[int],
                        seen_ms: float) -> None:
    """The report's failover section (docs/design.md §7 "DLedger failovers") tells the run as the
    nodes and the client saw it: one failover of the group, the kill of its leader behind it; the
    old master's answers to ``client`` (``answered``: their codes, as its ``send`` lines have them)
    are its stale-master sends, by what they got, and its misrouted sends (``stale_master``); the
    attempts refused while it was dead never reached a broker, so none is ``refused``; and the
    client's route showed the new master at ``seen_ms``, its first route after the old master's
    stop."""
    fo = doc["failover"]
    (change,) = fo["changes"]
    assert (change["group"], change["old_node"], change["node"], change["fault"], change["hit"]) == (
        GROUP, f.old, f.new, "kill", "leader"), change
    stale = fo["stale_master_sends"]
    assert stale["total"] == sum(answered.values()), (stale, answered)
    assert (stale["by_got"]["not_available"], stale["by_got"]["system_error"], stale["by_got"]["refused"]) == (
        answered[14], answered[1], 0), (stale, answered)
    mis = doc["misrouted"]
    assert mis["total"] == mis["by_reason"]["stale_master"] == sum(answered.values()), (mis, answered)
    (view,) = [v for v in fo["views"] if v["node"] == client]
    assert (view["who"], view["by"]) == ("client", "client.route"), view
    assert abs(view["stale_ms"] - (seen_ms - f.stopped_ms)) < 1.0, (view, seen_ms - f.stopped_ms)
