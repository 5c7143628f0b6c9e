"""A hand-made run of the RocketMQ 5 layer for the POP, timed-message and proxy-staleness tests (core
and report): one master, one proxy, gRPC clients written under ``client@<pid>`` by the proxy; times
are ms, scale 1, run.stop at 5000.

POP, group GS on topic T (msg ids m1 .. m3):

- m1: leased at 200 (pop 200), acked at 210 (proxy.ack ok, pop.ack ok).
- m2: leased in the same pop; its lease runs out: the proxy refuses the client's late ack as
  ``expired`` at 1500; pop.revive ``retry`` (attempt 2) at 1400; leased from the retry topic at 1600
  (attempt 2), acked at 1610. Needed 2 deliveries.
- m3: leased at attempts 1, 2, 3 (700, 1800, 2800, each revived before), then at attempt 4 at 3000 the
  proxy sends it to the DLQ (proxy.dlq ok). Needed 4 deliveries, never acked by a pop.ack.
  The master's retry.back (outcome dlq) makes it dead-lettered for the loss metrics.
- a forged handle: proxy.ack ``invalid`` at 2000.

FIFO, group GF on topic F (proxy-sent with a message group; send order f1 < f2 < f3 in g1, h1 < h2 in
g2, k1 < k2 in g3):

- g1: f1 leased 300, acked 310; f2 leased 320; f3 leased 330 while f2 is un-acked (a violation:
  ``unacked_previous``); f2 acked 340, f3 350. A broker refuses an ack of f3 at 360 (``not_out``).
- g2: h2 leased 400 before h1 (410): h2 is ``out_of_order`` and ``unacked_previous``.
- g3: k1 and k2 leased in one pop at 500 (k1 first): no violation; both acked at 510.

Timed messages on topic D: d1 parked at 600 for 2000, delivered at 2010 (10 ms late); d2 parked
at 610 to wait 1000 ms, never delivered (pending: ``delayed`` for the loss metrics, and late in
f1's window); d3 delivered by a master whose clock was set forward 5000 ms while it held it: early
by 5000 ms in true time.

Routes: proxy-0 holds T on broker-a from 100 (view proxy); client@1 got it from proxy-0 at 110. Fault
f1 pauses broker-a-0 over [1300, 1700): both views are stale (over) then; client@1's gRPC send s1 at
1350 went to the paused master (misrouted ``paused``).
"""
from __future__ import annotations

from typing import Any

STOP = 5000.0
END = 5100.0


class Run:
    """The run's lines under construction."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def add(self, ts: float, who: str, kind: str, **f: Any) -> None:
        self.lines.append({"ts": ts, "node": who, "kind": kind, **f})

    def send(self, ts: float, msg: str, topic: str, key: str | None = None, **f: Any) -> None:
        self.add(ts, "client@1", "send", msg_id=msg, topic=topic, broker="broker-a", broker_id=0, queue_id=0,
                 attempt=1, outcome="ok", code=0, latency_ms=1.0, group=topic, mode="grpc", proxy="proxy-0",
                 message_type="FIFO" if key else "NORMAL", **({"sharding_key": key} if key else {}), **f)

    def lease(self, ts: float, msg: str, group: str, attempt: int = 1, pop_time: float | None = None,
              fifo: bool = False, topic: str = "T") -> None:
        self.add(ts, "broker-a-0", "pop.lease", msg_id=msg, group=group, topic=topic, broker="broker-a", queue_id=0,
                 retry=attempt > 1 and not fifo, fifo=fifo, queue_offset=0, attempt=attempt, invisible_ms=1000,
                 pop_time=int(pop_time if pop_time is not None else ts))

    def ack(self, ts: float, msg: str, group: str, result: str = "ok", fifo: bool = False, topic: str = "T",
            proxy: bool = True) -> None:
        self.add(ts, "broker-a-0", "pop.ack", msg_id=msg, group=group, topic=topic, broker="broker-a", queue_id=0,
                 retry=False, fifo=fifo, offset=0, code=0 if result == "ok" else 26, result=result)
        if proxy:
            self.proxy_ack(ts + 1, msg, group, result if result == "ok" else "code_26", topic)

    def proxy_ack(self, ts: float, msg: str, group: str, result: str, topic: str = "T") -> None:
        self.add(ts, "client@2", "proxy.ack", group=group, topic=topic, msg_id=msg,
                 broker=None if result == "invalid" else "broker-a", proxy="proxy-0", result=result)

    def revive(self, ts: float, msg: str, attempt: int) -> None:
        self.add(ts, "broker-a-0", "pop.revive", msg_id=msg, group="GS", topic="T", broker="broker-a", queue_id=0,
                 retry=False, fifo=False, queue_offset=0, result="retry", retry_topic="%RETRY%GS_T", attempt=attempt,
                 pop_time=int(ts - 1100), invisible_ms=1000)

    def timer(self, ts: float, kind: str, msg: str, offset: int, skew: float = 0.0, **f: Any) -> None:
        self.add(ts, "broker-a-0", kind, local_ms=ts + skew, msg_id=msg, topic="D", queue_id=0, broker="broker-a",
                 offset=offset, deliver_ms=2000.0, due_ms=2000.0, **f)


def pop_run() -> list[dict[str, Any]]:
    """The run of the module docstring."""
    r = Run()
    for n, role in (("namesrv-0", "namesrv"), ("broker-a-0", "broker"), ("proxy-0", "proxy")):
        r.add(50, n, "node.start", role=role, pid=1)
    for t in ("T", "F", "D"):
        r.add(60, "broker-a-0", "broker.topic", broker="broker-a", broker_id=0, topic=t, read_queues=1, write_queues=1,
              perm=6, how="admin")
    route = [{"broker": "broker-a", "queue_id": 0}]
    r.add(100, "proxy-0", "client.route", topic="T", source="namesrv-0", publish_queues=route, changed=True, group="",
          view="proxy")
    r.add(110, "client@1", "client.route", topic="T", source="proxy-0", publish_queues=route, changed=True, group="")
    for ts, m in ((150, "m1"), (151, "m2"), (152, "m3")):
        r.send(ts, m, "T")
    for ts, m, k in ((160, "f1", "g1"), (161, "f2", "g1"), (162, "f3", "g1"), (163, "h1", "g2"), (164, "h2", "g2"),
                     (165, "k1", "g3"), (166, "k2", "g3")):
        r.send(ts, m, "F", k)
    r.lease(200, "m1", "GS"), r.lease(200, "m2", "GS"), r.ack(210, "m1", "GS")
    r.lease(300, "f1", "GF", fifo=True, topic="F"), r.ack(310, "f1", "GF", fifo=True, topic="F")
    r.lease(320, "f2", "GF", fifo=True, topic="F"), r.lease(330, "f3", "GF", fifo=True, topic="F")
    r.ack(340, "f2", "GF", fifo=True, topic="F"), r.ack(350, "f3", "GF", fifo=True, topic="F")
    r.ack(360, "f3", "GF", result="not_out", fifo=True, topic="F")
    r.lease(400, "h2", "GF", fifo=True, topic="F"), r.lease(410, "h1", "GF", fifo=True, topic="F")
    r.ack(420, "h1", "GF", fifo=True, topic="F"), r.ack(430, "h2", "GF", fifo=True, topic="F")
    r.lease(500, "k1", "GF", fifo=True, topic="F"), r.lease(500, "k2", "GF", pop_time=500, fifo=True, topic="F")
    r.ack(510, "k1", "GF", fifo=True, topic="F"), r.ack(511, "k2", "GF", fifo=True, topic="F")
    for ts, m in ((590, "d1"), (591, "d2"), (592, "d3")):
        r.send(ts, m, "D", deliver_ms=2000.0)
    r.timer(600, "timer.park", "d1", 0, wait_ms=1400.0), r.timer(610, "timer.park", "d2", 1, wait_ms=1000.0)
    r.timer(620, "timer.park", "d3", 2, wait_ms=1380.0)
    r.lease(700, "m3", "GS")
    r.send(1350, "s1", "T")
    r.revive(1400, "m2", 2), r.proxy_ack(1500, "m2", "GS", "expired")
    r.lease(1600, "m2", "GS", attempt=2), r.ack(1610, "m2", "GS")
    r.revive(1750, "m3", 2), r.lease(1800, "m3", "GS", attempt=2)
    r.proxy_ack(2000, "x", "GS", "invalid")
    r.timer(2010, "timer.deliver", "d1", 0, lateness_ms=10.0, queue_offset=0, offset_msg_id="o1", immediate=False)
    r.timer(1000, "timer.deliver", "d3", 2, skew=5000.0, lateness_ms=0.0, queue_offset=1, offset_msg_id="o3",
            immediate=True)
    r.revive(2750, "m3", 3), r.lease(2800, "m3", "GS", attempt=3)
    r.revive(2950, "m3", 4), r.lease(3000, "m3", "GS", attempt=4)
    r.add(3001, "client@2", "proxy.dlq", group="GS", topic="T", msg_id="m3", broker="broker-a", proxy="proxy-0",
          attempt=4, result="ok")
    r.add(3001, "broker-a-0", "retry.back", group="GS", topic="T", msg_id="m3", reconsume_times=4,
          max_reconsume_times=0, outcome="dlq", via="send_back", client="proxy-0")
    for t, ids in (("T", ["m1", "m2"]), ("F", ["f1", "f2", "f3", "h1", "h2", "k1", "k2"]), ("D", ["d1", "d3"])):
        r.add(3100, "client@2", "consume", group={"T": "GS", "F": "GF", "D": "GD"}[t], topic=t, broker="broker-a",
              queue_id=0, msg_ids=ids, delivery_attempts=[1] * len(ids), proxy="proxy-0")
    r.add(1300, "injector", "fault.start", fault_id="f1", fault="pause", targets=["broker-a-0"], params={"signal": 19})
    r.add(1700, "injector", "fault.end", fault_id="f1", fault="pause", targets=["broker-a-0"], params={"signal": 19},
          reason="scheduled")
    r.add(STOP, "launcher", "run.stop")
    r.add(END, "broker-a-0", "node.exit", code=0)
    return sorted(r.lines, key=lambda x: x["ts"])
