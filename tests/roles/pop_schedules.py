"""Random schedules against one master's POP (not a test module): a proxy that pops for a normal and
a FIFO group, acks, renews, forgets, while the clock moves and the broker is killed or stopped and
started again; the record of what it saw, for test_broker_pop_properties.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from rmqemu.emulator.launcher.drain import GroupWatch, backlog_of
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common import pop_keys as keys
from tests.roles.broker_helpers import broker
from tests.roles.fakes import Driver, FakeStore, FakeTime
from tests.roles.pop_helpers import TOPIC, create_topic, put

NORMAL, FIFO = "cg", "fg"
QUEUES = 2
Step = tuple[str, Any]

steps = st.one_of(
    st.tuples(st.just("send"), st.integers(0, QUEUES - 1)),
    st.tuples(st.just("pop"), st.tuples(st.sampled_from([NORMAL, FIFO]), st.integers(-1, QUEUES - 1),
                                        st.integers(1, 4), st.sampled_from([2000, 5000, 20000]))),
    st.tuples(st.just("ack"), st.integers(0, 50)),
    st.tuples(st.just("renew"), st.tuples(st.integers(0, 50), st.sampled_from([1000, 4000, 15000]))),
    st.tuples(st.just("advance"), st.sampled_from([0, 500, 1500, 3000, 6000, 12000])),
    st.tuples(st.just("restart"), st.booleans()),  # True: killed (no stop), False: a graceful stop
)
schedules = st.lists(steps, max_size=30)


@dataclass
class Lease:
    group: str
    uniq: str
    ck: str  # the POP_CK: the handle
    retry: bool
    queue_id: int
    offset: int
    pop_time: int
    end: int  # when the lease runs out (broker wall ms)
    attempt: int
    epoch: int
    acked: bool = False  # acked, or renewed, while it still ran
    late_acked: bool = False  # acked after it ran out (it counts unless it was revived first)
    since: int = 0  # when it began to run: its pop, or the renewal that made it
    done: bool = False  # the proxy is done with it (acked, renewed or forgotten)

    @property
    def key(self) -> tuple[str, bool, int, int, int, int]:
        return self.group, self.retry, self.queue_id, self.offset, self.pop_time, self.end


@dataclass
class World:
    store: FakeStore = field(default_factory=FakeStore)
    time: FakeTime = field(default_factory=FakeTime)
    drivers: list[Driver] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)
    # epoch, queue, the batch's leases, now, how many leases were out before it
    fifo_batches: list[tuple[int, int, list[Lease], int, int]] = field(default_factory=list)
    acked_fifo: dict[tuple[int, int], int] = field(default_factory=dict)  # (queue, offset) -> epoch acked in
    epoch: int = 0
    drain_looks: list[tuple[str, set[str]]] = field(default_factory=list)  # (group, un-acked) when drained

    @property
    def d(self) -> Driver:
        return self.drivers[-1]

    @property
    def now(self) -> int:
        return int(self.d.now().wall_ms)

    def boot(self) -> None:
        self.drivers.append(broker(store=self.store, time=self.time))
        if len(self.drivers) == 1:
            create_topic(self.d, queues=QUEUES)

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for d in self.drivers for e in d.events(kind)]

    def acked(self, group: str) -> set[str]:
        """Messages the group acked in time (or late, before the lease was revived), so far."""
        revived = {(e["group"], e["retry"], e["queue_id"], e["queue_offset"], e["pop_time"],
                    e["pop_time"] + e["invisible_ms"]) for e in self.events("pop.revive") if not e["fifo"]}
        return {x.uniq for x in self.leases if x.group == group and (x.acked or x.late_acked and x.key not in revived)}

    def look(self) -> None:
        """The end-of-run drain's look at this moment (emulator/launcher/drain.py): for each group
        it would call done, what was sent and not yet acked by it."""
        state = self.d.role.state()
        for group in (NORMAL, FIFO):
            watch = GroupWatch(group, (TOPIC, keys.retry_topic(TOPIC, group)), False, ())
            if backlog_of([watch], {"broker-a": state}, {}).empty:
                self.drain_looks.append((group, set(self.sent) - self.acked(group)))

    def pop(self, group: str, queue_id: int, max_nums: int, invisible: int) -> list[Lease]:
        d, fifo = self.d, group == FIFO
        header = {"consumerGroup": group, "topic": TOPIC, "queueId": queue_id, "maxMsgNums": max_nums,
                  "invisibleTime": invisible, "pollTime": 0, "bornTime": self.now, "initMode": 1, "order": fifo}
        resp = d.call(RC.POP_MESSAGE, header, channel="proxy", peer="proxy-0")
        assert resp is not None and resp.code in (0, 210), resp
        got = []
        for m in (resp.json_body() or []) if resp.code == 0 else []:
            parts = m["properties"][keys.POP_CK].split(" ")
            got.append(Lease(group, m["properties"]["UNIQ_KEY"], m["properties"][keys.POP_CK], parts[4] == "1",
                             int(parts[6]), int(parts[7]), int(parts[1]), int(parts[1]) + int(parts[2]),
                             m["reconsumeTimes"] + 1, self.epoch))
        if fifo:
            for q in sorted({x.queue_id for x in got}):
                self.fifo_batches.append((self.epoch, q, [x for x in got if x.queue_id == q], self.now,
                                          len(self.leases)))
        self.leases += got
        return got

    def _handle_fields(self, lease: Lease) -> dict[str, Any]:
        topic = keys.retry_topic(TOPIC, lease.group) if lease.retry else TOPIC
        return {"consumerGroup": lease.group, "topic": topic, "queueId": lease.queue_id, "extraInfo": lease.ck,
                "offset": lease.offset}

    def ack(self, lease: Lease) -> None:
        running = self.now < lease.end
        resp = self.d.call(RC.ACK_MESSAGE, self._handle_fields(lease), channel="proxy", peer="proxy-0")
        assert resp is not None
        lease.done = True
        # a FIFO ack the broker took ("ok": the offset marked done) counts even when late, as in 5.x:
        # nothing handed the offset out again in between
        took = self.d.events("pop.ack")[-1]["result"] in ("ok", "no_order_info")
        if resp.code == 0 and (running or (lease.group == FIFO and took)):
            lease.acked = True
        elif resp.code == 0 and took:
            lease.late_acked = True
        if lease.acked and lease.group == FIFO and took:
            self.acked_fifo.setdefault((lease.queue_id, lease.offset), self.epoch)

    def renew(self, lease: Lease, invisible: int) -> None:
        running = self.now < lease.end
        resp = self.d.call(RC.CHANGE_INVISIBLE_TIME, {**self._handle_fields(lease), "invisibleTime": invisible},
                           channel="proxy", peer="proxy-0")
        assert resp is not None
        if resp.code != 0:
            return
        lease.done = True
        lease.acked = running and lease.group == NORMAL  # a FIFO renewal keeps the same lease running longer
        f = resp.fields
        parts = lease.ck.split(" ")
        parts[0:4] = [str(lease.offset), str(f["popTime"]), str(f["invisibleTime"]), str(f["reviveQid"])]
        if lease.group == FIFO:
            if self.d.events("pop.change_invisible")[-1]["result"] != "ok":  # "stale": 5.x's SUCCESS, no change
                lease.done = False
                return
            end = int(f["popTime"]) + int(f["invisibleTime"])  # shorter or longer: as asked
            lease.end = min(lease.end, self.now)  # the renewed lease goes on as the new one
            self.leases.append(Lease(lease.group, lease.uniq, " ".join(parts), lease.retry, lease.queue_id,
                                     lease.offset, int(f["popTime"]), end, lease.attempt, self.epoch,
                                     since=self.now))
            return
        self.leases.append(Lease(lease.group, lease.uniq, " ".join(parts), lease.retry, lease.queue_id,
                                 lease.offset, int(f["popTime"]), int(f["popTime"]) + invisible, lease.attempt,
                                 self.epoch))

    def open_leases(self) -> list[Lease]:
        return [x for x in self.leases if not x.done]

    def step(self, step: Step) -> None:
        kind, arg = step
        if kind == "send":
            uniq = f"u{len(self.sent)}"
            self.sent.append(uniq)
            put(self.d, uniq, queue_id=arg)
        elif kind == "pop":
            self.pop(*arg)
        elif kind == "ack" and self.open_leases():
            self.ack(self.open_leases()[arg % len(self.open_leases())])
        elif kind == "renew" and self.open_leases():
            index, invisible = arg
            self.renew(self.open_leases()[index % len(self.open_leases())], invisible)
        elif kind == "advance":
            self.d.advance(arg)
        elif kind == "restart":
            if arg:
                self.epoch += 1  # a kill: what the broker had not flushed is gone
            else:
                self.d.stop()
            self.boot()

    def drain(self) -> None:
        """Heal: let every lease run out and be revived, then pop and ack everything, until two
        rounds in a row find nothing."""
        empty = 0
        while empty < 2:
            self.d.advance(20000 + 4000)
            found = False
            for group, queues in ((NORMAL, [-1]), (FIFO, list(range(QUEUES)))):
                for q in queues:
                    while True:
                        got = self.pop(group, q, 32, 60000)
                        for lease in got:
                            self.ack(lease)
                        found = found or bool(got)
                        if not got:
                            break
            empty = 0 if found else empty + 1


def play(schedule: list[Step]) -> World:
    w = World()
    w.boot()
    for s in schedule:
        w.step(s)
        w.look()
    w.drain()
    return w
