"""Generate a large synthetic run directory for benchmarking ``rmqemu report``.

    .venv/bin/python bench/gen_events.py OUT_DIR [--events 1000000] [--seed 7]

Writes ``manifest.json``, ``events/<node>.jsonl`` and ``faults.jsonl`` in the schema of
docs/design.md §6, from a small seeded discrete-event model of a cluster (2 namesrvs,
4 brokers with a slave each, 8 producers, 2 consumer groups) under a nemesis of kills with
restart, pauses and producer<->broker partitions. Why a model and not random lines: the
report's joins and windows only do realistic work on realistic structure (routes that
lag truth, retries after timeouts, restores after restarts), and the DuckDB comparison
must get the same non-trivial answers.

Mix at 1M events (seed 7): ~80% send, ~10% pull, ~9% consume, ~2% client.route, ~0.5%
rebalance, the rest node.start/exit, ns.broker, ns.route, broker.topic, fault.start/end.
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import json
import random
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import gen_shape as shape
from gen_shape import AUTO, BROKERS, GROUPS, NAMESRVS, PRODUCERS, QUEUES, TOPICS


class Model:
    """The cluster state and the event writer (one file handle per node)."""

    def __init__(self, out: Path, seed: int, target: int, rate: float) -> None:
        self.rng, self.target, self.rate = random.Random(seed), target, rate
        self.out, self.count, self.kinds = out, 0, Counter()
        (out / "events").mkdir(parents=True, exist_ok=True)
        self.files: dict[str, Any] = {}
        self.heap: list[tuple[float, int, Any, tuple]] = []
        self.seq = itertools.count()
        self.t0 = self.now = 1_700_000_000_000.0
        self.alive = {f"{b}-{i}": True for b in BROKERS for i in (0, 1)}
        self.paused: set[str] = set()
        self.cut: set[tuple[str, str]] = set()
        self.hosts = {b: {t for t, bs in TOPICS.items() if b in bs} for b in BROKERS}
        self.ns_view = {n: {t: set(bs) for t, bs in TOPICS.items()} for n in NAMESRVS}
        self.views: dict[tuple[str, str], list[str]] = {}
        self.acked: dict[str, list[str]] = {t: [] for t in QUEUES}
        self.cursor: dict[tuple[str, str], int] = {}
        self.msg = itertools.count()
        self.faults = 0

    def emit(self, node: str, kind: str, **fields: Any) -> None:
        name = "faults" if kind.startswith("fault.") else node
        fh = self.files.get(name)
        if fh is None:
            path = self.out / ("faults.jsonl" if name == "faults" else f"events/{name}.jsonl")
            fh = self.files[name] = open(path, "w", encoding="utf-8", buffering=1 << 20)
        rec = {"ts": round(self.now, 3), "node": node, "kind": kind, **fields}
        fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.count += 1
        self.kinds[kind] += 1

    def at(self, delay: float, fn: Any, *args: Any) -> None:
        heapq.heappush(self.heap, (self.now + delay, next(self.seq), fn, args))

    def up(self, b: str) -> bool:
        """Master of broker ``b`` alive and not paused (what truth needs)."""
        return self.alive[f"{b}-0"] and f"{b}-0" not in self.paused

    # --- namesrv side -------------------------------------------------------------
    def ns_route(self, ns: str, topic: str) -> None:
        view = sorted(self.ns_view[ns][topic])
        self.emit(ns, "ns.route", topic=topic, masters=view,
                  queue_datas=[{"broker": b, "read": QUEUES[topic], "write": QUEUES[topic], "perm": 6} for b in view])

    def ns_change(self, ns: str, b: str, change: str) -> None:
        self.emit(ns, "ns.broker", broker_addr=f"127.0.0.1:{10911 + BROKERS.index(b)}", broker=b, broker_id=0,
                  change=change)
        for topic in TOPICS:
            hosted = b in TOPICS[topic] and change == "register"
            if hosted != (b in self.ns_view[ns][topic]):
                (self.ns_view[ns][topic].add if hosted else self.ns_view[ns][topic].discard)(b)
                self.ns_route(ns, topic)

    def expire_check(self, ns: str, b: str) -> None:
        if not self.up(b) and b in self.ns_view[ns][shape.topic_of(b)]:
            self.ns_change(ns, b, "expired")

    def register(self, ns: str, b: str) -> None:
        if self.up(b) and b not in self.ns_view[ns][shape.topic_of(b)]:
            self.ns_change(ns, b, "register")

    # --- clients --------------------------------------------------------------------
    def poll(self, client: str, topics: list[str]) -> None:
        ns = NAMESRVS[zlib.crc32(client.encode()) % len(NAMESRVS)]  # sticky, stable across runs
        for topic in topics:
            if topic == "NewTopic":
                brokers, source = sorted(b for b in AUTO if self.up(b)), "TBW102"
            else:
                brokers, source = sorted(self.ns_view[ns][topic]), ns
            old = self.views.get((client, topic))
            self.views[(client, topic)] = brokers
            self.emit(client, "client.route", topic=topic, source=source, changed=old != brokers,
                      publish_queues=[{"broker": b, "queue_id": q} for b in brokers for q in range(QUEUES[topic])])
        self.at(shape.POLL, self.poll, client, topics)

    def target_ok(self, producer: str, b: str, topic: str) -> tuple[str, float, int]:
        node = f"{b}-0"
        if not self.alive[node]:
            return "error", self.rng.uniform(0.2, 1.0), 10
        if node in self.paused or (producer, node) in self.cut:
            return "timeout", shape.TIMEOUT, 0
        if topic not in self.hosts[b]:
            if topic == "NewTopic" and b in AUTO:
                self.hosts[b].add(topic)
                self.emit(node, "broker.topic", broker=b, broker_id=0, topic=topic, read_queues=8, write_queues=8,
                          perm=6, how="auto")
            else:
                return "error", self.rng.uniform(0.3, 2.0), 17
        return "ok", self.rng.lognormvariate(0.3, 0.5), 0

    def send(self, producer: str, topics: list[str]) -> None:
        topic = self.rng.choice(topics)
        msg = f"{producer}-{next(self.msg)}"
        view = self.views.get((producer, topic)) or []
        if not view:
            self.emit(producer, "send", msg_id=msg, topic=topic, broker=None, queue_id=None, attempt=1,
                      outcome="no_route", code=None, latency_ms=None, group=producer[:4],
                      error=f"No route info of this topic: {topic}")
        for attempt in range(1, 4 if view else 1):
            b = self.rng.choice(view)
            qid = self.rng.randrange(QUEUES[topic] + (1 if self.rng.random() < 0.0005 else 0))
            extra = {"broker_id": 1} if self.rng.random() < 0.0005 else {}
            outcome, lat, code = self.target_ok(producer, b, topic)
            self.emit(producer, "send", msg_id=msg, topic=topic, broker=b, queue_id=qid, attempt=attempt,
                      outcome=outcome, code=code, latency_ms=round(lat, 3), group=producer[:4], **extra)
            if outcome == "ok":
                if self.rng.random() > 0.0002:  # a few acked messages are never delivered: "lost"
                    self.acked[topic].append(msg)
                break
        self.at(self.rng.expovariate(self.rate / 1000.0), self.send, producer, topics)

    def pull(self, consumer: str, group: str, topic: str) -> None:
        b = self.rng.choice(TOPICS[topic])
        code = 24 if self.rng.random() < 0.001 else 0
        self.emit(consumer, "pull", group=group, topic=topic, broker=b, queue_id=self.rng.randrange(QUEUES[topic]),
                  code=code)
        pos = self.cursor.get((group, topic), 0)
        batch = self.acked[topic][pos:pos + 32]
        if batch and code == 0 and self.up(b):
            self.cursor[(group, topic)] = pos + len(batch) - (1 if self.rng.random() < 0.01 else 0)
            self.emit(consumer, "consume", group=group, topic=topic, broker=b, queue_id=0, msg_ids=batch)
        self.at(self.rng.uniform(5, 15), self.pull, consumer, group, topic)

    def rebalance(self, consumer: str, group: str, topics: list[str]) -> None:
        members = GROUPS[group][0]
        for topic in topics:
            mqs = [{"broker": b, "queue_id": q} for b in self.views.get((consumer, topic)) or []
                   for q in range(QUEUES[topic])]
            i, n = members.index(consumer), len(members)
            self.emit(consumer, "rebalance", group=group, topic=topic, cid=f"{consumer}@1",
                      cids=[f"{m}@1" for m in members], strategy="AVG", allocated=mqs[i::n])
        self.at(shape.REBALANCE, self.rebalance, consumer, group, topics)

    # --- faults ----------------------------------------------------------------------
    def fault(self, kind: str, fid: str, name: str, targets: list[str], **params: Any) -> None:
        self.emit("injector", kind, fault_id=fid, fault=name, targets=targets, params=params)

    def nemesis(self) -> None:
        self.faults += 1
        fid, b = f"f{self.faults}", self.rng.choice(BROKERS)
        node, roll = f"{b}-0", self.rng.random()
        if roll < 0.35 and self.alive[node] and node not in self.paused:
            self.fault("fault.start", fid, "kill", [node])
            self.alive[node] = False
            self.emit(node, "node.exit", signal="9")
            self.fault("fault.end", fid, "kill", [node])
            for ns in NAMESRVS:
                self.at(self.rng.uniform(2, 15), self.ns_change, ns, b, "channel_destroy")
            self.at(self.rng.uniform(2000, 4000), self.restart, b, f"{fid}r")
        elif roll < 0.7 and self.alive[node] and node not in self.paused:
            self.fault("fault.start", fid, "pause", [node])
            self.paused.add(node)
            for ns in NAMESRVS:
                self.at(shape.EXPIRY + self.rng.uniform(0, shape.REGISTER), self.expire_check, ns, b)
            self.at(self.rng.uniform(500, 2000), self.resume, fid, node)
        else:
            p = self.rng.choice(PRODUCERS)
            self.fault("fault.start", fid, "partition", [p, node], links=[[p, node], [node, p]])
            self.cut |= {(p, node)}
            self.at(self.rng.uniform(1000, 3000), self.heal, fid, p, node)
        self.at(self.rng.uniform(4000, 8000), self.nemesis)

    def resume(self, fid: str, node: str) -> None:
        self.paused.discard(node)
        self.fault("fault.end", fid, "pause", [node])
        for ns in NAMESRVS:
            self.at(self.rng.uniform(0, shape.REGISTER), self.register, ns, node[:-2])

    def heal(self, fid: str, p: str, node: str) -> None:
        self.cut.discard((p, node))
        self.fault("fault.end", fid, "partition", [p, node])

    def restart(self, b: str, fid: str) -> None:
        node = f"{b}-0"
        self.fault("fault.start", fid, "restart", [node])
        self.alive[node] = True
        self.emit(node, "node.start", role="broker", pid=self.rng.randrange(2000, 60000), broker=b, broker_id=0)
        self.fault("fault.end", fid, "restart", [node])
        self.at(self.rng.uniform(5, 30), self.restore, b)

    def restore(self, b: str) -> None:
        """The restarted broker reloads its topics.json (auto-created topics included)."""
        node = f"{b}-0"
        for topic in sorted(self.hosts[b]):
            self.emit(node, "broker.topic", broker=b, broker_id=0, topic=topic, read_queues=QUEUES.get(topic, 8),
                      write_queues=QUEUES.get(topic, 8), perm=7 if topic == "TBW102" else 6, how="restore")
        for ns in NAMESRVS:
            self.at(self.rng.uniform(10, shape.REGISTER), self.register, ns, b)

    # --- run -------------------------------------------------------------------------
    def start(self) -> None:
        for ns in NAMESRVS:
            self.emit(ns, "node.start", role="namesrv", pid=100 + NAMESRVS.index(ns))
        for b in BROKERS:
            for bid in (0, 1):
                node = f"{b}-{bid}"
                self.emit(node, "node.start", role="broker", pid=200, broker=b, broker_id=bid)
                for topic in sorted(self.hosts[b] | ({"TBW102"} if b in AUTO else set())):
                    self.emit(node, "broker.topic", broker=b, broker_id=bid, topic=topic,
                              read_queues=QUEUES.get(topic, 8), write_queues=QUEUES.get(topic, 8),
                              perm=7 if topic == "TBW102" else 6, how="startup" if topic == "TBW102" else "admin")
            self.hosts[b] |= {"TBW102"} if b in AUTO else set()
        for ns in NAMESRVS:
            for b in BROKERS:
                self.emit(ns, "ns.broker", broker_addr="127.0.0.1", broker=b, broker_id=0, change="register")
            for topic in TOPICS:
                self.ns_route(ns, topic)
        for i, p in enumerate(PRODUCERS):
            topics = ["T0", "T1", "T2", "T3"] + (["NewTopic"] if p.startswith("pg-2") else [])
            self.emit(p, "node.start", role="producer", pid=300 + i)
            self.at(self.rng.uniform(0, 50), self.poll, p, topics)
            self.at(100 + self.rng.uniform(0, 50), self.send, p, topics)
        for group, (members, topics) in GROUPS.items():
            for c in members:
                self.emit(c, "node.start", role="consumer", pid=400)
                self.at(self.rng.uniform(0, 50), self.poll, c, topics)
                self.at(60 + self.rng.uniform(0, 50), self.rebalance, c, group, topics)
                for topic in topics:
                    self.at(100 + self.rng.uniform(0, 50), self.pull, c, group, topic)
        self.at(2000, self.nemesis)

    def run(self) -> dict[str, Any]:
        self.start()
        while self.heap and self.count < self.target:
            self.now, _, fn, args = heapq.heappop(self.heap)
            fn(*args)
        self.now += 1
        for node in [*NAMESRVS, *[f"{b}-{i}" for b in BROKERS for i in (0, 1)], *PRODUCERS,
                     *[c for members, _ in GROUPS.values() for c in members]]:
            if self.alive.get(node, True):
                self.emit(node, "node.exit", code=0)
        for fh in self.files.values():
            fh.close()
        return {"events": self.count, "wall_s": (self.now - self.t0) / 1000.0, "kinds": dict(self.kinds)}


def generate(out: Path, events: int = 1_000_000, seed: int = 7, rate: float = 800.0) -> dict[str, Any]:
    """Write the run dir; returns ``{"events", "wall_s", "kinds"}``."""
    stats = Model(out, seed, events, rate).run()
    doc = shape.manifest(out.name, seed, stats["wall_s"] / shape.SCALE)
    (out / "manifest.json").write_text(json.dumps(doc, indent=1))
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rate", type=float, default=800.0, help="sends per wall second per producer")
    a = ap.parse_args()
    stats = generate(a.out, a.events, a.seed, a.rate)
    print(json.dumps(stats, indent=1))


if __name__ == "__main__":
    main()
