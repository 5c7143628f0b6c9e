"""Random fault schedules for a master's transactions (not a test module): a master under the real
runtime on the fake clock, one producer of group ``pg`` played by the test, and plain-data steps.

Each half has a plan: what its local transaction decides (``commit``, ``rollback``, ``unknown``;
``lost``: the end never arrives, as when the producer dies or the oneway is dropped; ``late``: a
commit that arrives after the next stretch of time, perhaps after a check) and what the producer
answers when checked. Steps: send a half, let time pass (the producer answering every check
pushed to it meanwhile), the producer's channel closing or coming back, the master killed or stopped
and started again on the same store, its clock jumped. :func:`play` runs a schedule, heals every
fault, lets the checks run out, and returns what the invariants need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from rmqemu.emulator.protocol import Frame
from tests.roles.broker_helpers import broker
from tests.roles.fakes import Driver, FakeStore, FakeTime
from tests.roles.tx_helpers import COMMIT, ROLLBACK, UNKNOWN, checks, end, half, producer_heartbeat, stored

CONFIG = {"transactionCheckInterval": 1000, "transactionTimeOut": 600, "transactionCheckMax": 4,
          "flushConsumerOffsetInterval": 700}
DECISIONS = {"commit": COMMIT, "rollback": ROLLBACK, "unknown": UNKNOWN}
Step = tuple[str, Any]


def steps(max_steps: int = 14) -> st.SearchStrategy[list[Step]]:
    plan = st.tuples(st.sampled_from(["commit", "rollback", "unknown", "lost", "late"]),
                     st.sampled_from(["commit", "rollback", "unknown"]))
    step = st.one_of(
        st.tuples(st.just("half"), plan),
        st.tuples(st.just("half"), plan),
        st.tuples(st.just("advance"), st.integers(50, 2500)),
        st.tuples(st.just("producer"), st.booleans()),
        st.tuples(st.just("restart"), st.booleans()),  # True: killed (no stop), False: a graceful stop
        st.tuples(st.just("clock"), st.integers(-3000, 3000)),
    )
    return st.lists(step, min_size=1, max_size=max_steps)


@dataclass
class World:
    time: FakeTime = field(default_factory=FakeTime)
    store: FakeStore = field(default_factory=FakeStore)
    plans: dict[str, tuple[str, str]] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    producer_up: bool = True
    drivers: list[Driver] = field(default_factory=list)
    late: list[tuple[str, Frame]] = field(default_factory=list)  # first-hand commits still on their way

    @property
    def d(self) -> Driver:
        return self.drivers[-1]

    def boot(self) -> None:
        self.drivers.append(broker(config=CONFIG, store=self.store, time=self.time))
        if self.producer_up:
            producer_heartbeat(self.d, "p@1")

    def all_events(self, kind: str) -> list[dict[str, Any]]:
        return [f for d in self.drivers for f in d.events(kind)]

    def answer_checks(self, mark: int) -> None:
        for check in checks(self.d, since=mark):
            if not self.producer_up:
                continue  # pushed before the channel closed: lost with it
            f = check.frame.fields
            decision = self.plans[str(f["msgId"])][1]
            end(self.d, (int(f["tranStateTableOffset"]), int(f["commitLogOffset"])), DECISIONS[decision],
                str(f["msgId"]), from_check=True, channel=check.channel)

    def advance(self, ms: float) -> None:
        mark = self.d.mark()
        self.d.advance(ms)
        self.answer_checks(mark)
        for uniq, resp in self.late:  # the slow local transactions end now, naming the original half
            if self.producer_up:
                end(self.d, resp, COMMIT, uniq)
            else:  # the producer is gone: its end with it
                self.plans[uniq] = ("lost", self.plans[uniq][1])
        self.late.clear()

    def step(self, step: Step) -> None:
        kind, arg = step
        if kind == "half" and self.producer_up:
            uniq = f"u{len(self.plans)}"
            self.plans[uniq] = arg
            resp: Frame = half(self.d, uniq, born=self.time.wall_ms)  # the producer's clock is never skewed
            if resp.code == 0 and arg[0] == "late":
                self.late.append((uniq, resp))
            elif resp.code == 0 and arg[0] != "lost":
                end(self.d, resp, DECISIONS[arg[0]], uniq)
        elif kind == "advance":
            self.advance(arg)
        elif kind == "producer" and arg != self.producer_up:
            self.producer_up = arg
            if arg:
                producer_heartbeat(self.d, "p@1")
            else:
                self.d.channel("closed", "prod-ch")
        elif kind == "restart":
            if not arg:
                self.d.stop()
            self.boot()
        elif kind == "clock":
            self.d.set_clock(offset_ms=float(arg))


def play(schedule: list[Step]) -> World:
    """Run ``schedule``, heal (the producer back, the clock true), then let every half run out of
    checks: (``transactionCheckMax`` + 3) intervals."""
    w = World()
    w.boot()
    for s in schedule:
        w.step(s)
    w.step(("producer", True))
    w.d.set_clock(offset_ms=0.0)
    for _ in range(CONFIG["transactionCheckMax"] + 3):
        w.advance(CONFIG["transactionCheckInterval"])
    return w


def violations(w: World) -> list[str]:
    """The invariants (docs/rocketmq-model.md §9), as messages; empty when all hold."""
    out: list[str] = []
    visible: dict[str, int] = {}
    for m in stored(w.d, "A", 2):
        visible[m["msgId"]] = visible.get(m["msgId"], 0) + 1
    ends = w.all_events("tx.end")
    commits = {u: sum(1 for e in ends if e["msg_id"] == u and e["action"] == "commit" and e["result"] == "ok")
               for u in w.plans}
    rolled = {e["msg_id"] for e in ends if e["action"] == "rollback" and e["result"] == "ok"}
    discarded = {e["msg_id"] for e in w.all_events("tx.discard")}
    timeout, most = CONFIG["transactionTimeOut"], CONFIG["transactionCheckMax"]
    for uniq, (local, answer) in w.plans.items():
        if visible.get(uniq, 0) != commits[uniq]:
            out.append(f"{uniq}: {visible.get(uniq, 0)} copies visible for {commits[uniq]} commits")
        if "commit" not in (local, answer) and local != "late" and visible.get(uniq):
            out.append(f"{uniq}: visible though nobody committed it ({local}, {answer})")
        if not (visible.get(uniq) or uniq in rolled or uniq in discarded):
            out.append(f"{uniq}: still open after the heal and {most + 3} passes ({local}, {answer})")
        if local in ("commit", "late") and not visible.get(uniq):
            out.append(f"{uniq}: committed first-hand but never visible")
    for c in w.all_events("tx.check"):
        if -1 < c["age_ms"] < timeout:
            out.append(f"{c['msg_id']}: checked {c['age_ms']} ms after its birth, under {timeout}")
        if not 1 <= c["check_times"] <= most:
            out.append(f"{c['msg_id']}: check number {c['check_times']} of at most {most}")
    return out
