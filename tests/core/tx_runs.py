"""A hand-made run of transactional messages for the transactions section's tests (core and
report): two masters, one transactional producer, two consumer groups on one topic; times are ms,
scale 1. The producer group, topic, consumer groups and message ids are parameters, so a test can
give them any text.

What happens to each message (``t1`` .. ``t9`` by position in ``Names.ids``; ``m1``, an ordinary one):

- t1: sent, stored on broker-a at 1300, committed first-hand at 1310 (visible after 10 ms); both
  groups consume it.
- t2: rolled back first-hand; never consumed.
- t3: committed first-hand at 1620 (visible 20 ms), then a check of its copy (offset 10) is answered
  with a second commit at 2610: stored twice (first-hand and check); cg-1 consumes it twice,
  cg-2 once.
- t4: rolled back first-hand, and still delivered to cg-1 (a violation).
- t5: still open: one check without a producer channel; an end that found no half is no end.
- t6: checked twice without a channel, then discarded (max_checks).
- t7: its half send timed out but it was stored at 2200; checked twice (offsets 11, 12); the
  second check's answer commits it at 3510 (after 2 checks; visible 1310 ms); cg-1 consumes it,
  cg-2 never does (the committed loss).
- t8: checked once, the answer rolls it back (after 1 check).
- t9: its first attempt timed out on broker-a (stored there at 2400), the retry went to broker-b
  (stored at 2450); each master checks its half once and each answer commits: stored twice (checks
  only), the first commit on broker-b at 3455 (visible 1005 ms); cg-2 consumes it twice, cg-1 once.

Faults: f2 pauses cg-2's consumer over [1790, 1850), while t3 and t4 were alive; f1 sets
broker-a's clock over [3000, 4000), while t5 .. t9 were. run.stop at 5000.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STOP = 5000.0
END = 5100.0


@dataclass(frozen=True)
class Names:
    """The user's names the run is written with."""

    producer_group: str = "pg"
    topic: str = "T"
    groups: tuple[str, str] = ("cg-1", "cg-2")
    ids: tuple[str, ...] = ("t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "m1")


class Run:
    """The run's lines under construction."""

    def __init__(self, names: Names) -> None:
        self.n, self.lines = names, []

    def id(self, i: int) -> str:
        return self.n.ids[i - 1]

    def add(self, ts: float, who: str, kind: str, **f: Any) -> None:
        self.lines.append({"ts": ts, "node": who, "kind": kind, **f})

    def send(self, ts: float, i: int, outcome: str = "ok", broker: str = "broker-a", half: bool = True) -> None:
        self.add(ts, "pg-1-0", "send", msg_id=self.id(i), topic=self.n.topic, broker=broker, queue_id=0, attempt=1,
                 outcome=outcome, code=0 if outcome == "ok" else None, latency_ms=1.0 if outcome == "ok" else None,
                 broker_id=0, group=self.n.producer_group, mode="sync",
                 **({"transaction": "half"} if half else {}))

    def _tx(self, ts: float, broker: str, kind: str, i: int, **f: Any) -> None:
        self.add(ts, f"{broker}-0", kind, msg_id=self.id(i), group=self.n.producer_group, broker=broker, **f)

    def half(self, ts: float, i: int, offset: int, broker: str = "broker-a") -> None:
        self._tx(ts, broker, "tx.half", i, topic=self.n.topic, queue_id=0, offset=offset,
                 commit_log_offset=1000 + offset)

    def end(self, ts: float, i: int, action: str, offset: int, from_check: bool = False, result: str = "ok",
            broker: str = "broker-a") -> None:
        commit = action == "commit" and result == "ok"
        self._tx(ts, broker, "tx.end", i, action=action, from_check=from_check, result=result, code=None,
                 offset=offset, **({"topic": self.n.topic, "queue_id": 0, "queue_offset": offset} if commit else {}))

    def check(self, ts: float, i: int, times: int, offset: int, channel: bool = True, broker: str = "broker-a") -> None:
        self._tx(ts, broker, "tx.check", i, check_times=times, offset=offset,
                 client_id="pg-1-0@1" if channel else None, age_ms=ts - 1000.0)

    def consume(self, ts: float, g: int, *ids: int) -> None:
        self.add(ts, f"cg-{g}-0", "consume", group=self.n.groups[g - 1], topic=self.n.topic, broker="broker-a",
                 queue_id=0, msg_ids=[self.id(i) for i in ids])


def tx_run(names: Names = Names()) -> list[dict[str, Any]]:
    """The run of the module docstring."""
    r = Run(names)
    for n, role in (("broker-a-0", "broker"), ("broker-b-0", "broker"), ("pg-1-0", "producer"),
                    ("cg-1-0", "consumer"), ("cg-2-0", "consumer")):
        r.add(1000, n, "node.start", role=role, pid=1)
    for b in ("broker-a", "broker-b"):
        r.add(1001, f"{b}-0", "broker.topic", broker=b, broker_id=0, topic=names.topic, read_queues=1, write_queues=1,
              perm=6, how="admin")
    for g in (1, 2):
        r.add(1050, f"cg-{g}-0", "rebalance", group=names.groups[g - 1], topic=names.topic, cid=f"c{g}", cids=[f"c{g}"],
              strategy="AVG", allocated=[{"broker": "broker-a", "queue_id": 0}])
    r.send(1100, 10, half=False)
    r.consume(1200, 1, 10)
    r.consume(1200, 2, 10)
    r.send(1300, 1), r.half(1300, 1, 0), r.end(1310, 1, "commit", 0), r.consume(1400, 1, 1), r.consume(1400, 2, 1)
    r.send(1500, 2), r.half(1500, 2, 1), r.end(1505, 2, "rollback", 1)
    r.send(1600, 3), r.half(1600, 3, 2), r.end(1620, 3, "commit", 2)
    r.consume(1700, 1, 3), r.consume(1700, 2, 3)
    r.send(1800, 4), r.half(1800, 4, 3), r.end(1801, 4, "rollback", 3), r.consume(1900, 1, 4)
    r.send(2000, 5), r.half(2000, 5, 4), r.end(2010, 5, "commit", 4, result="not_found")
    r.send(2100, 6), r.half(2100, 6, 5)
    r.send(2200, 7, outcome="timeout"), r.half(2200, 7, 6)
    r.send(2300, 8), r.half(2300, 8, 7)
    r.send(2400, 9, outcome="timeout"), r.half(2400, 9, 8)
    r.send(2450, 9, broker="broker-b"), r.half(2450, 9, 0, broker="broker-b")
    r.check(2600, 3, 1, 10), r.end(2610, 3, "commit", 10, from_check=True), r.consume(2700, 1, 3)
    r.check(3000, 5, 1, 14, channel=False)
    r.check(3100, 6, 1, 15, channel=False), r.check(3200, 6, 2, 16, channel=False)
    r.add(3300, "broker-a-0", "tx.discard", msg_id=r.id(6), group=names.producer_group, broker="broker-a",
          check_times=2, reason="max_checks")
    r.check(3200, 7, 1, 11), r.check(3500, 7, 2, 12), r.end(3510, 7, "commit", 12, from_check=True)
    r.check(3400, 8, 1, 13), r.end(3410, 8, "rollback", 13, from_check=True)
    r.check(3450, 9, 1, 1, broker="broker-b"), r.end(3455, 9, "commit", 1, from_check=True, broker="broker-b")
    r.check(3460, 9, 1, 9), r.end(3465, 9, "commit", 9, from_check=True)
    r.consume(3600, 1, 7)
    r.consume(3700, 1, 9), r.consume(3700, 2, 9), r.consume(3800, 2, 9)
    for fid, kind, targets, lo, hi in (("f2", "pause", ["cg-2-0"], 1790, 1850),
                                       ("f1", "clock", ["broker-a-0"], 3000, 4000)):
        for ts, what in ((lo, "fault.start"), (hi, "fault.end")):
            r.add(ts, "injector", what, fault_id=fid, fault=kind, targets=targets, params={})
    r.add(STOP, "launcher", "run.stop")
    for n in ("broker-a-0", "broker-b-0", "pg-1-0", "cg-1-0", "cg-2-0"):
        r.add(END, n, "node.exit", role="x", pid=1, code=0)
    return r.lines
