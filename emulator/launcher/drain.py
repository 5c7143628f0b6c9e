"""The end-of-run drain (docs/design.md §6): "lost" must mean lost, not "the run ended first".

Stopping every client at once leaves the messages acked in the last few milliseconds unconsumed
by some group, and the report would call them lost. So the launcher stops the producers first,
then waits, bounded by ``timing.drainTimeout`` (cluster seconds), until every consumer group has
consumed up to each master's max offset of every queue of every topic it subscribes, as
Jepsen's final reads do, and only then stops the consumers. The outcome is one ``run.drain``
line in ``faults.jsonl``.

A POP group (RocketMQ 5 clients) moves its offset when it leases, so it also waits for the
messages its master's revive log holds leased, neither acked nor revived: a lease that runs out
puts its message into ``%RETRY%<group>_<topic>`` only then.

What "consumed up to" is read from: the masters' own tables over the control plane (``state``:
``queues`` holds each queue's max offset, ``offsets`` the committed consumer offsets), which is
what RocketMQ's ``consumerProgress`` compares (brokerOffset against consumerOffset). Why not
the consumers' ``consume`` events: they name messages, not queue positions, so a message a tag
filter skipped, or one that went to ``%RETRY%<group>`` and back, could not be told from one not
yet pulled. The committed offset lags consumption by at most ``persistConsumerOffsetInterval``
(pulls also carry it), and the drain simply polls across that. It is also exact: a consumer
commits the lowest offset not yet consumed, so committed == max means every message of the
queue was consumed (or filtered out). A BROADCASTING group keeps its offsets on each instance
(``LocalFileOffsetStore``), so there each live instance's own table is read and each instance
must catch up.

The waiting itself (:func:`wait_drained`) takes its clock, its sleep and its probe as functions,
so it is tested with a fake clock and fake offsets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from rmqemu.emulator.launcher import dledger as _dledger
from rmqemu.emulator.roles.common.pop_keys import retry_topic as pop_retry_topic
from rmqemu.errors import ControlError

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher
    from rmqemu.emulator.launcher.topology_load import NodePlan

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX
MAX_LAG_ROWS = 50  # lag rows kept in the event: enough to see the pattern, never a huge line
STATE_TIMEOUT_MS = 2000.0  # one `state` call; shorter when the bound is nearer


@dataclass(frozen=True)
class GroupWatch:
    """What one consumer group must catch up on."""

    group: str
    topics: tuple[str, ...]  # subscribed topics (tags stripped), plus %RETRY%<group> when clustering
    broadcasting: bool
    instances: tuple[str, ...]  # node names


@dataclass(frozen=True)
class Lag:
    """One queue a group has not consumed to its end."""

    group: str
    topic: str
    broker: str
    queue_id: int
    lag: int
    consumer: str | None = None  # BROADCASTING: the instance behind
    leased: bool = False  # POP: messages leased, neither acked nor revived (``lag`` of them)

    def to_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"group": self.group, "topic": self.topic, "broker": self.broker,
                               "queue_id": self.queue_id, "lag": self.lag}
        if self.consumer is not None:
            row["consumer"] = self.consumer
        if self.leased:
            row["leased"] = True
        return row


@dataclass
class Backlog:
    """What is left at one look: queues behind, and masters that could not be read."""

    lags: list[Lag] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.lags and not self.unreadable


@dataclass
class DrainResult:
    completed: bool
    waited_ms: float
    timeout_ms: float
    backlog: Backlog
    interrupted: bool = False

    def event(self) -> dict[str, Any]:
        """The ``run.drain`` line (without ``ts``)."""
        rows = sorted(self.backlog.lags, key=lambda x: (-x.lag, x.group, x.topic, x.broker, x.queue_id))
        out: dict[str, Any] = {
            "node": "launcher", "kind": "run.drain", "completed": self.completed,
            "waited_ms": round(self.waited_ms, 3), "timeout_ms": self.timeout_ms,
            "lag_total": sum(x.lag for x in self.backlog.lags),
            "lag_left": [x.to_dict() for x in rows[:MAX_LAG_ROWS]],
            "unreadable": sorted(self.backlog.unreadable),
        }
        if self.interrupted:
            out["interrupted"] = True
        return out


def groups_to_watch(plans: Iterable["NodePlan"]) -> list[GroupWatch]:
    """Every consumer group of the topology with the topics its instances subscribe (two
    entries of one group may subscribe differently: the union is watched)."""
    topics: dict[str, set[str]] = {}
    broadcasting: dict[str, bool] = {}
    instances: dict[str, list[str]] = {}
    for p in plans:
        if p.role != "consumer" or p.group is None:
            continue
        subs = p.workload.get("subscribe") or []
        topics.setdefault(p.group, set()).update(str(s["topic"]) for s in subs)
        if p.workload.get("client") == "v5":  # POP: a group's retries come back in %RETRY%<group>_<topic>
            topics[p.group].update(pop_retry_topic(str(s["topic"]), p.group) for s in subs)
        broadcasting[p.group] = p.workload.get("messageModel") == "BROADCASTING"
        instances.setdefault(p.group, []).append(p.name)
    out = []
    for group in sorted(topics):
        watched = set(topics[group])
        if not broadcasting[group]:  # a clustering consumer subscribes its retry topic itself
            watched.add(RETRY_GROUP_TOPIC_PREFIX + group)
        out.append(GroupWatch(group, tuple(sorted(watched)), broadcasting[group], tuple(instances[group])))
    return out


def _max_offsets(master_state: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """``{(topic, queue_id): max offset}`` from a broker's ``state()["queues"]`` (``"T:q": n``)."""
    out = {}
    for key, count in (master_state.get("queues") or {}).items():
        topic, _, qid = str(key).rpartition(":")
        out[(topic, int(qid))] = int(count)
    return out


def backlog_of(groups: Iterable[GroupWatch], masters: Mapping[str, Mapping[str, Any] | None],
               consumers: Mapping[str, Mapping[str, Any] | None]) -> Backlog:
    """What is left, from the masters' states by broker name (None: unreadable) and, for
    BROADCASTING groups, the instances' states by node name (None: not running)."""
    backlog = Backlog(unreadable=sorted(b for b, s in masters.items() if s is None))
    readable = {b: _max_offsets(s) for b, s in masters.items() if s is not None}
    for g in groups:
        for broker, st in sorted(masters.items()):
            for topic, group, qid, n in ((st or {}).get("pop") or {}).get("in_flight", []):
                if group == g.group and int(n) > 0:
                    backlog.lags.append(Lag(g.group, str(topic), broker, int(qid), int(n), leased=True))
        for broker, maxes in sorted(readable.items()):
            for (topic, qid), max_offset in sorted(maxes.items()):
                if topic not in g.topics or max_offset <= 0:
                    continue
                if not g.broadcasting:
                    table = (masters[broker] or {}).get("offsets", {}).get(f"{topic}@{g.group}", {})
                    done = max(int(table.get(str(qid), -1)), 0)
                    if done < max_offset:
                        backlog.lags.append(Lag(g.group, topic, broker, qid, max_offset - done))
                    continue
                live = {n: consumers.get(n) for n in g.instances if consumers.get(n) is not None}
                if not live:  # nobody left to consume it
                    backlog.lags.append(Lag(g.group, topic, broker, qid, max_offset))
                for name, st in sorted(live.items()):
                    own = {(t, b, int(q)): int(o) for t, b, q, o in (st or {}).get("offsets", [])}
                    done = max(own.get((topic, broker, qid), -1), 0)
                    if done < max_offset:
                        backlog.lags.append(Lag(g.group, topic, broker, qid, max_offset - done, name))
    return backlog


def wait_drained(probe: Callable[[float], Backlog], clock_ms: Callable[[], float],
                 sleep_ms: Callable[[float], None], timeout_ms: float, poll_ms: float) -> DrainResult:
    """Look (``probe(ms left)``) until nothing is left or ``timeout_ms`` has passed; at least
    one look, even with a zero bound. A KeyboardInterrupt (Ctrl-C, SIGTERM) ends the wait, marked
    interrupted, with what one last look sees: the caller still stops the cluster gracefully."""
    start = clock_ms()
    backlog = Backlog()
    try:
        while True:
            backlog = probe(max(timeout_ms - (clock_ms() - start), 0.0))
            waited = clock_ms() - start
            if backlog.empty:
                return DrainResult(True, waited, timeout_ms, backlog)
            if waited >= timeout_ms:
                return DrainResult(False, waited, timeout_ms, backlog)
            sleep_ms(min(poll_ms, timeout_ms - waited))
    except KeyboardInterrupt:  # may have hit a look half done: one more, short, for the record
        waited = clock_ms() - start
        try:
            backlog = probe(0.0)
        except KeyboardInterrupt:
            pass
        return DrainResult(False, waited, timeout_ms, backlog, interrupted=True)


def cluster_probe(cluster: "Launcher", groups: list[GroupWatch]) -> Callable[[float], Backlog]:
    """A probe that reads the live masters (and BROADCASTING instances) over the control plane;
    a DLedger group's master is the peer that says it is master at that look (none: unreadable)."""
    masters = {p.broker: n for n, p in cluster.plans.items() if p.role == "broker" and p.broker_id == 0}
    dledger_groups = _dledger.groups(cluster.plans.values())
    broadcast_nodes = [n for g in groups if g.broadcasting for n in g.instances]

    def read(name: str, left_ms: float) -> dict[str, Any] | None:
        proc = cluster.procs.get(name)
        if proc is None or not proc.alive() or name in cluster.stopped:
            return None
        try:
            return cluster.state(name, timeout_ms=max(200.0, min(STATE_TIMEOUT_MS, left_ms)))
        except ControlError:
            return None

    def group_master(broker: str, left_ms: float) -> dict[str, Any] | None:
        states = _dledger.peer_states(cluster, broker, max(200.0, min(STATE_TIMEOUT_MS, left_ms)))
        master = _dledger.master_of(states)
        return states[master] if master is not None else None

    def probe(left_ms: float) -> Backlog:
        states = {b: read(n, left_ms) for b, n in masters.items() if b is not None}
        states.update({b: group_master(b, left_ms) for b in dledger_groups})
        consumers = {n: read(n, left_ms) for n in broadcast_nodes}
        return backlog_of(groups, states, consumers)

    return probe


def drain(cluster: "Launcher", timeout_s: float) -> DrainResult:
    """Wait for every consumer group to catch up (``timeout_s`` cluster seconds at most),
    handling control messages and node exits meanwhile; write ``run.drain``."""
    groups = groups_to_watch(cluster.plans.values())
    timeout_ms = timeout_s * 1000 * cluster.scale
    poll_ms = max(50.0, 1000 * cluster.scale)  # 1 cluster s, but not busier than 20 looks per wall s

    def sleep_ms(ms: float) -> None:
        end = time.monotonic() + ms / 1000
        while (left := end - time.monotonic()) > 0:
            cluster.pump(min(left * 1000, 20.0))

    def clock_ms() -> float:
        return time.monotonic() * 1000

    result = wait_drained(cluster_probe(cluster, groups), clock_ms, sleep_ms, timeout_ms, poll_ms)
    event = result.event()
    cluster.record(event)
    if not result.completed:  # quiet when it worked: the usual case needs no line
        cluster.log(f"drain: not completed after {result.waited_ms / 1000 / cluster.scale:.1f} cluster s; "
                    f"{event['lag_total']} message(s) not consumed"
                    + (f", masters unreadable: {', '.join(event['unreadable'])}" if event["unreadable"] else "")
                    + (" (interrupted)" if result.interrupted else ""))
    return result
