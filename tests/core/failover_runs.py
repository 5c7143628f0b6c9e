"""Hand-made runs of one DLedger group (three peers ``broker-a-n0..n2``, master n0 in term 1) whose
leader is killed, paused or cut off from its peers, for the failover section's tests (core and
report). Times are ms, scale 1; every expected number is worked out in the scenario's docstring.
``G``, ``T``, ``CG`` and the message ids are parameters, so a test can give them any text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PEERS = ("n0", "n1", "n2")
ADDR = {p: f"10.0.0.{i}:10911" for i, p in enumerate(PEERS)}
NS = ("namesrv-0", "namesrv-1")
STOP = 40_000.0


@dataclass(frozen=True)
class Names:
    """The user's names a run is written with: group (broker name), topic, consumer group, ids."""

    group: str = "broker-a"
    topic: str = "T"
    consumer_group: str = "cg"
    ids: tuple[str, ...] = ("m1", "m2", "m3", "m4", "m5", "m6")


def node(peer: str) -> str:
    return f"broker-a-{peer}"


class Run:
    """A run's lines under construction."""

    def __init__(self, names: Names) -> None:
        self.n, self.lines = names, []

    def add(self, ts: float, who: str, kind: str, **f: Any) -> None:
        self.lines.append({"ts": ts, "node": who, "kind": kind, **f})

    def role(self, ts: float, peer: str, term: int, role: str, leader: str | None) -> None:
        self.add(ts, node(peer), "dledger.role", group=self.n.group, peer=peer, term=term, role=role, leader=leader,
                 ledger_end_index=-1, committed_index=-1)

    def broker_role(self, ts: float, peer: str, term: int, master: bool) -> None:
        bid = 0 if master else PEERS.index(peer) + 1
        self.add(ts, node(peer), "broker.role", broker=self.n.group, broker_id=bid,
                 role="SYNC_MASTER" if master else "SLAVE", term=term)

    def ns_broker(self, ts: float, ns: str, peer: str, bid: int, change: str = "register") -> None:
        self.add(ts, ns, "ns.broker", broker_addr=ADDR[peer], broker=self.n.group, broker_id=bid, change=change)

    def ns_route(self, ts: float, ns: str, master: bool, extra: tuple[str, ...] = ()) -> None:
        qd = [{"broker": b, "read": 4, "write": 4, "perm": 6} for b in (self.n.group, *extra)]
        self.add(ts, ns, "ns.route", topic=self.n.topic, queue_datas=qd,
                 masters=[b for b in (self.n.group, *extra) if master or b != self.n.group])

    def route(self, ts: float, who: str, source: str, brokers: tuple[str, ...]) -> None:
        self.add(ts, who, "client.route", topic=self.n.topic, source=source, changed=True,
                 publish_queues=[{"broker": b, "queue_id": 0} for b in brokers], group="pg")

    def send(self, ts: float, msg: int, peer: str | None, outcome: str = "ok", code: int | None = 0,
             attempt: int = 1, broker: str | None = None, addr: str | None = None) -> None:
        self.add(ts, "pg-0", "send", msg_id=self.n.ids[msg - 1], topic=self.n.topic,
                 broker=broker or self.n.group, broker_id=0, queue_id=0, attempt=attempt, outcome=outcome, code=code,
                 latency_ms=1.0, group="pg", broker_addr=addr or (ADDR[peer] if peer else None))

    def consume(self, ts: float, msg: int, offset: int, broker: str | None = None) -> None:
        self.add(ts, "cg-0", "consume", group=self.n.consumer_group, topic=self.n.topic,
                 broker=broker or self.n.group, queue_id=0, msg_ids=[self.n.ids[msg - 1]], offsets=[offset])

    def fault(self, ts: float, kind: str, fid: str, fault: str, targets: list[str], **params: Any) -> None:
        self.add(ts, "injector", kind, fault_id=fid, fault=fault, targets=targets, params=params)


def _start(names: Names, extra: tuple[str, ...] = ()) -> Run:
    """Every node up at 0, each peer hosting the topic; n0 elected in term 1 at 100, its broker
    master at 110, registered with both namesrvs at 120; both clients take the route at 130; m1
    sent at 200, consumed at 210 (offset 0)."""
    r = Run(names)
    for i, p in enumerate(PEERS):
        r.add(0.0, node(p), "node.start", role="broker", pid=1, addr=ADDR[p])
        r.add(0.0, node(p), "broker.topic", broker=names.group, broker_id=i + 1 if i else 0, topic=names.topic,
              read_queues=4, write_queues=4, perm=6, how="admin")
    for who, role in (*((ns, "namesrv") for ns in NS), ("pg-0", "producer"), ("cg-0", "consumer")):
        r.add(0.0, who, "node.start", role=role, pid=1)
    r.role(100.0, "n0", 1, "LEADER", "n0")
    for p in ("n1", "n2"):
        r.role(100.0, p, 1, "FOLLOWER", "n0")
    r.broker_role(110.0, "n0", 1, True)
    for p in ("n1", "n2"):
        r.broker_role(110.0, p, 1, False)
    for ns in NS:
        r.ns_broker(120.0, ns, "n0", 0)
        r.ns_route(120.0, ns, True, extra)
    r.route(130.0, "pg-0", "namesrv-0", (names.group, *extra))
    r.route(130.0, "cg-0", "namesrv-1", (names.group, *extra))
    r.send(200.0, 1, "n0")
    r.consume(210.0, 1, 0)
    return r


def _elect_n1(r: Run, register_on: tuple[str, ...] = NS) -> None:
    """n1 a candidate at 7000, leader of term 2 at 7300 (n2 follows), its broker master at 7400;
    the namesrvs in ``register_on`` write its register (broker_id 0) at 7390."""
    r.role(7000.0, "n1", 1, "CANDIDATE", None)
    r.role(7300.0, "n1", 2, "LEADER", "n1")
    r.role(7310.0, "n2", 2, "FOLLOWER", "n1")
    r.broker_role(7400.0, "n1", 2, True)
    for ns in register_on:
        r.ns_broker(7390.0, ns, "n1", 0)


def kill_run(names: Names = Names()) -> list[dict[str, Any]]:
    """f1 kills n0 at 1000 (its node.exit at 999: stopped). namesrv-0 drops it (channel closed) and
    its route loses the master at 1001; namesrv-1 too. n1 elected at 7300 (election 6301 ms), master
    at 7400 (no master 6401 ms). namesrv-0 writes n1's register at 7390 (stale 6391); namesrv-1 only
    regains the master in its ns.route at 7395 (6396). cg-0 takes namesrv-1's route at 8000
    (7001); pg-0 namesrv-0's at 30000 (29001), after one at 5000 (before the election). pg-0 sends
    m2 to n0's address at 1100, 1500 and 8000, all refused (3 stale-master sends; the first failure
    1100); m5 to n1 ok at 30100 (RTO 29000); m6 ok at 30150, never consumed (lost). cg-0 gets m5
    (offset 1) and m1 again from offset 0 (re-consumed) at 30200. run.stop at 40000."""
    r = _start(names)
    r.add(999.0, "broker-a-n0", "node.exit", role="broker", pid=1, signal=9)
    r.fault(1000.0, "fault.start", "f1", "kill", ["broker-a-n0"])
    for ns in NS:
        r.ns_broker(1001.0, ns, "n0", 0, "channel_destroy")
        r.ns_route(1001.0, ns, False)
    for i, ts in enumerate((1100.0, 1500.0, 8000.0)):
        r.send(ts, 2, "n0", "error", 10001, attempt=i + 1)
    r.route(5000.0, "pg-0", "namesrv-0", ())
    _elect_n1(r, ("namesrv-0",))
    r.ns_route(7390.0, "namesrv-0", True)
    r.ns_route(7395.0, "namesrv-1", True)
    r.route(8000.0, "cg-0", "namesrv-1", (names.group,))
    r.route(30000.0, "pg-0", "namesrv-0", (names.group,))
    r.send(30100.0, 5, "n1")
    r.send(30150.0, 6, "n1")
    r.consume(30200.0, 5, 1)
    r.consume(30200.0, 1, 0)
    r.add(STOP, "launcher", "run.stop")
    return r.lines


def pause_run(names: Names = Names()) -> list[dict[str, Any]]:
    """f1 pauses n0 from 1000 (stopped) to 20000. n1 elected at 7300, master at 7400; only
    namesrv-0 writes its register (7390: stale 6390); namesrv-1 never shows it (its table kept the
    paused master: stale to the run.stop, 39000). n0 resumed follows term 2 at 20050 (its broker a
    slave at 20100). pg-0's sends of m2 to n0: a timeout at 4000, SYSTEM_ERROR at 20020 and
    SERVICE_NOT_AVAILABLE at 20060 (3 stale-master sends); its route from namesrv-0 at 25000
    (stale 24000), m3 to n1 ok at 25100 (RTO 21100). cg-0 never takes a new route (stale 39000).
    f2 pauses follower n2 at 30000-31000: no failover."""
    r = _start(names)
    r.fault(1000.0, "fault.start", "f1", "pause", ["broker-a-n0"])
    r.send(4000.0, 2, "n0", "timeout", 10002)
    _elect_n1(r, ("namesrv-0",))
    r.fault(20000.0, "fault.end", "f1", "pause", ["broker-a-n0"])
    r.send(20020.0, 2, "n0", "error", 1, attempt=2)
    r.role(20050.0, "n0", 2, "FOLLOWER", "n1")
    r.send(20060.0, 2, "n0", "error", 14, attempt=3)
    r.broker_role(20100.0, "n0", 2, False)
    r.route(25000.0, "pg-0", "namesrv-0", (names.group,))
    r.send(25100.0, 3, "n1")
    r.fault(30000.0, "fault.start", "f2", "pause", ["broker-a-n2"])
    r.fault(31000.0, "fault.end", "f2", "pause", ["broker-a-n2"])
    r.consume(30500.0, 3, 1)
    r.add(STOP, "launcher", "run.stop")
    return r.lines


def partition_run(names: Names = Names()) -> list[dict[str, Any]]:
    """f1 cuts n0 off its peers from 1000 (stopped) to 20000; a classic broker ``broker-b`` also
    hosts the topic. m2's first attempt to n0 got SYSTEM_ERROR at 3400 (its quorum ack timed out,
    but n1 had the entry and committed it); the retry went to broker-b, ok at 3460. n0 steps down
    at 7100 (its broker a slave at 7150); n1 leader of term 2 at 7300, master at 7400, registered
    with both namesrvs at 7390 (stale 6390 each). pg-0 sends m3 to n0 at 8000: SERVICE_NOT_AVAILABLE
    (2 stale-master sends); it takes namesrv-0's route at 9500 (stale 8500) and sends m4 to n1, ok at
    9600 (RTO 6200). cg-0 consumes m2 from broker-b (3500) and from broker-a offset 1 (9000): a
    duplicate of a send committed anyway; m4 at 9700. Healed at 20000, n0 follows term 2 and has 2
    entries of term 1 truncated."""
    r = _start(names, ("broker-b",))
    r.add(0.0, "broker-b-0", "node.start", role="broker", pid=1, addr="10.0.1.0:10911", broker="broker-b",
          broker_id=0)
    links = [["broker-a-n0", node(p)] for p in ("n1", "n2")] + [[node(p), "broker-a-n0"] for p in ("n1", "n2")]
    r.fault(1000.0, "fault.start", "f1", "partition", ["broker-a-n0"], links=links)
    r.send(3400.0, 2, "n0", "error", 1)
    r.send(3460.0, 2, None, broker="broker-b", attempt=2, addr="10.0.1.0:10911")
    r.consume(3500.0, 2, 0, broker="broker-b")
    r.role(7100.0, "n0", 1, "CANDIDATE", None)
    r.broker_role(7150.0, "n0", 1, False)
    _elect_n1(r)
    r.send(8000.0, 3, "n0", "error", 14)
    r.consume(9000.0, 2, 1)
    r.route(9500.0, "pg-0", "namesrv-0", (names.group, "broker-b"))
    r.send(9600.0, 4, "n1")
    r.consume(9700.0, 4, 2)
    r.fault(20000.0, "fault.end", "f1", "partition", ["broker-a-n0"], links=links)
    r.role(20100.0, "n0", 2, "FOLLOWER", "n1")
    r.add(20150.0, "broker-a-n0", "dledger.truncate", group=names.group, peer="n0", term=2, index=5, removed=2,
          removed_terms=[1, 1])
    r.add(STOP, "launcher", "run.stop")
    return r.lines
