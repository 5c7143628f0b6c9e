"""ali-ons (a real RocketMQ client) against an emulated broker on loopback (issue 26).

    .venv/bin/python bench/real_client_bench.py [--sends 2000] [--size 256] [--repeat 3] [--json out.json]

A. Latency and throughput. One cluster (scale 1.0, namesrv-0, broker-a master, BenchTopic 4 queues,
   remoting on) with one emulated sync producer (rate 2000/s, the per-instance limit: it is never
   idle, a sync send in flight skips the tick). ali-ons (``bench/alions_sync.js``, each send timed
   with hrtime) and the emulated producer take turns, ``--repeat`` times each (A B A B ...): while
   ali-ons sends, the emulated producer is paused (SIGSTOP); while it sends, ali-ons is not running.
   Each side's first ``WARMUP`` sends of a turn are left out (route look-up, connections, JIT).
   The emulated side's latency is its ``send`` events' ``latency_ms``; only sends started after
   the resume count.
B. Loss across a kill. broker-a (master + slave) and broker-b; a live consume.js, then produce.js
   (300 random bodies, every fourth 4-20 KiB, compressed by ali-ons, 40 ms apart); broker-a-0 is
   SIGKILLed after a third are acked and restarted 5 s later; after the producer, a second group
   reads everything from the first offset. Every acked body is looked for, byte for byte, among
   each group's deliveries (a body deflated once more by ali-ons' retry is counted apart).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqemu import emulator, jsonlines  # noqa: E402
from tests.realclients.drivers import NodeProcess, start_consumer, start_node, start_producer, stop_process  # noqa: E402

TOPIC = "BenchTopic"
WARMUP = 50
EMU_RATE = 2000.0  # limits.MAX_PRODUCER_WALL_RATE at scale 1.0
SYNC_JS = str(Path(__file__).resolve().parent / "alions_sync.js")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))]


def summary(lat: list[float], ends_ms: list[float]) -> dict[str, Any]:
    """p50/p90/p99 of ``lat`` and sends per second over the completions ``ends_ms``."""
    span_s = (ends_ms[-1] - ends_ms[0]) / 1000
    return {"n": len(lat), "p50": round(pct(lat, 50), 3), "p90": round(pct(lat, 90), 3), "p99": round(pct(lat, 99), 3),
            "mean": round(statistics.fmean(lat), 3), "sends_per_s": round((len(ends_ms) - 1) / span_s, 1)}


def latency_topology(size: int) -> dict[str, Any]:
    return {"name": "bench-real-latency", "seed": 26, "timing": {"scale": 1.0}, "namesrvs": 1,
            "brokers": [{"name": "broker-a", "slaves": 0}],
            "topics": [{"name": TOPIC, "brokers": ["broker-a"], "queues": 4}],
            "producers": [{"group": "bench_emu", "topics": [TOPIC], "rate": EMU_RATE, "size": size,
                           "mode": "sync", "keys": False}],
            "remoting": True, "duration": "3600s"}


class EventTail:
    """The new lines of one node's ``events/<node>.jsonl`` (read incrementally)."""

    def __init__(self, path: Path) -> None:
        self.path, self.pos = path, 0

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            data = f.read()
        cut = jsonlines.complete_length(data)
        self.pos += cut
        return jsonlines.parse(data[:cut]).records


def run_alions(c: emulator.Cluster, args: argparse.Namespace, log_dir: Path,
               procs: list[NodeProcess]) -> dict[str, Any]:
    cfg = {"nameSrv": c.namesrv_addr, "topic": TOPIC, "producerGroup": "bench_alions", "count": args.sends,
           "body_size": args.size, "stdin_eof_stops": True}
    proc = start_node(SYNC_JS, cfg, log_dir, "alions-sync")
    procs.append(proc)
    c.wait_for(lambda: proc.poll() is not None, 60 + args.sends * 0.1, "alions_sync.js to finish")
    sends = [x for x in proc.lines() if "i" in x]
    if proc.returncode != 0 or len(sends) != args.sends or not all(x["ok"] for x in sends):
        raise RuntimeError(f"alions_sync.js failed\n{proc.describe()}")
    kept = sends[WARMUP:]
    return summary([x["ms"] for x in kept], [x["end_ms"] for x in kept])


def run_emulated(c: emulator.Cluster, node: str, tail: EventTail, n: int) -> dict[str, Any]:
    tail.read()  # what it sent before the pause
    resumed_ms = time.time() * 1000
    c.resume(node)
    got: list[dict[str, Any]] = []
    last = [0.0]

    def enough() -> bool:
        if time.monotonic() - last[0] < 0.2:
            return False
        last[0] = time.monotonic()
        got.extend(e for e in tail.read() if e.get("kind") == "send" and e.get("latency_ms") is not None
                   and e["ts"] - e["latency_ms"] >= resumed_ms)
        return len(got) >= n
    c.wait_for(enough, 60 + n * 0.05, f"{n} emulated sends")
    c.pause(node)
    if not all(e["outcome"] == "ok" for e in got[:n]):
        raise RuntimeError(f"emulated sends failed: {[e for e in got[:n] if e['outcome'] != 'ok'][:3]}")
    kept = got[WARMUP:n]
    return summary([e["latency_ms"] for e in kept], [e["ts"] for e in kept])


def bench_latency(args: argparse.Namespace, out: Path, procs: list[NodeProcess]) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    with emulator.Cluster(latency_topology(args.size), run_dir=out / "latency-run") as c:
        c.wait_routed(TOPIC)
        node = c.nodes("producer")[0]
        c.pause(node)
        tail = EventTail(c.run_dir / "events" / f"{node}.jsonl")
        for k in range(args.repeat):
            for side in ("alions", "emulated"):
                started = time.strftime("%H:%M:%S")
                res = (run_alions(c, args, out / "js", procs) if side == "alions"
                       else run_emulated(c, node, tail, args.sends))
                runs.append({"side": side, "round": k + 1, "at": started, **res})
                log(f"A round {k + 1} {side}: p50 {res['p50']} p90 {res['p90']} p99 {res['p99']} ms, "
                    f"{res['sends_per_s']} sends/s")
    med = {side: {key: round(statistics.median(r[key] for r in runs if r["side"] == side), 3)
                  for key in ("p50", "p90", "p99", "sends_per_s")} for side in ("alions", "emulated")}
    ratio = med["alions"]["p50"] / med["emulated"]["p50"]
    return {"runs": runs, "median": med, "p50_ratio": round(ratio, 2), "goal_met": ratio <= 2.0,
            "warmup_excluded": WARMUP, "emulated_rate": EMU_RATE}


def loss_topology() -> dict[str, Any]:
    return {"name": "bench-real-loss", "seed": 26, "timing": {"scale": 1.0}, "namesrvs": 1,
            "brokers": [{"name": "broker-a", "slaves": 1, "autoCreateTopicEnable": True},
                        {"name": "broker-b", "slaves": 0, "autoCreateTopicEnable": True}],
            "topics": [{"name": "LossTopic", "brokers": ["broker-a", "broker-b"], "queues": 4}],
            "remoting": True, "duration": "3600s"}


def make_bodies(n: int, seed: int = 26) -> list[bytes]:
    """Random bodies of 1-2048 bytes; every fourth 4-20 KiB (half of those compressible)."""
    rng = random.Random(seed)
    bodies = []
    for i in range(n):
        if i % 4 == 3:
            size = rng.randrange(4097, 20 * 1024)
            body = rng.randbytes(size) if i % 8 == 3 else (rng.randbytes(64) * (size // 64 + 1))[:size]
        else:
            body = rng.randbytes(rng.randrange(1, 2049))
        bodies.append(i.to_bytes(4, "big") + body)  # unique even if the generator repeated itself
    return bodies


class Deliveries:
    """What one consume.js received, each body classified (see :func:`classify`) as its lines come."""

    def __init__(self, proc: NodeProcess, index: dict[bytes, int]) -> None:
        self.proc, self.index, self.pos = proc, index, 0
        self.got: list[tuple[str, int | None]] = []  # ("exact" | "recompressed" | "corrupted", body index)

    def indexes(self) -> set[int | None]:
        lines = self.proc.lines()
        self.got += [classify(base64.b64decode(x["body_b64"]), self.index) for x in lines[self.pos:]
                     if x.get("action") == "consumed"]
        self.pos = len(lines)
        return {i for _, i in self.got}

    def report(self, acked: set[int]) -> dict[str, Any]:
        self.indexes()
        exact = {i for how, i in self.got if how == "exact"}
        recompressed = {i for how, i in self.got if how == "recompressed"} - exact
        found = [i for _, i in self.got if i is not None]
        return {"deliveries": len(self.got), "received_exact": len(exact & acked),
                "lost": len(acked - exact - recompressed), "recompressed_by_client": len(recompressed & acked),
                "corrupted_unexplained": sum(1 for how, _ in self.got if how == "corrupted"),
                "duplicates": len(found) - len(set(found)), "unacked_delivered": len((exact | recompressed) - acked),
                "not_exact": sorted(i for i in acked - exact if i is not None)[:20]}


def bench_loss(args: argparse.Namespace, out: Path, procs: list[NodeProcess]) -> dict[str, Any]:
    """Live consumer through the kill, then a second group from the first offset after the restart."""
    bodies = make_bodies(args.loss_sends)
    index = {b: i for i, b in enumerate(bodies)}
    with emulator.Cluster(loss_topology(), run_dir=out / "loss-run") as c:
        base = {"nameSrv": c.namesrv_addr, "topic": "LossTopic"}
        procs.append(start_consumer({**base, "consumerGroup": "bench_loss_live"}, out / "js", "loss-live"))
        live = Deliveries(procs[-1], index)
        c.wait_for(lambda: any(x.get("assigned") for x in live.proc.lines()), 60, "the consumer's queues")
        procs.append(start_producer({**base, "producerGroup": "bench_loss_pg", "count": len(bodies), "interval_ms": 40,
                                     "bodies": [base64.b64encode(b).decode() for b in bodies]},
                                    out / "js", "loss-producer"))
        producer = procs[-1]
        c.wait_for(lambda: sum(1 for x in producer.lines() if x.get("ok")) >= len(bodies) // 3, 120, "sends acked")
        log("B: killing broker-a-0 (restart after 5s)")
        kill = c.kill("broker-a-0", restart_after="5s")
        kill_ms = time.time() * 1000
        c.wait_for(lambda: producer.poll() is not None, 300, "produce.js to finish")
        c.wait_for(lambda: not kill.active, 60, "broker-a-0's restart")
        sends = [x for x in producer.lines() if "i" in x]
        acked = {x["i"] % len(bodies) for x in sends if x["ok"]}
        on_a = sum(1 for x in sends if x["ok"] and x["queue"]["broker"] == "broker-a" and x["ts"] < kill_ms)
        procs.append(start_consumer({**base, "consumerGroup": "bench_loss_late"}, out / "js", "loss-late"))
        late = Deliveries(procs[-1], index)
        started = time.monotonic()
        try:
            c.wait_for(lambda: acked <= live.indexes() and acked <= late.indexes(), args.loss_deadline,
                       "every acked message consumed by both groups")
        except TimeoutError as exc:
            log(f"B: {exc}")
        waited = time.monotonic() - started
        for consumer in (live.proc, late.proc):
            stop_process(consumer)
    return {"sends": len(sends), "acked": len(acked), "failed": len(sends) - len(acked),
            "large_acked": sum(1 for i in acked if len(bodies[i]) > 4096), "on_broker_a_before_kill": on_a,
            "wait_after_producer_s": round(waited, 1), "live": live.report(acked), "late": late.report(acked)}


def classify(body: bytes, index: dict[bytes, int]) -> tuple[str, int | None]:
    """A delivered body: a sent body byte for byte, a sent body deflated once more (ali-ons compresses
    ``msg.body`` in place, so a send retried after a failed attempt carries the compressed bytes), or neither."""
    if body in index:
        return "exact", index[body]
    try:
        inflated = zlib.decompress(body)
    except zlib.error:
        return "corrupted", None
    return ("recompressed", index[inflated]) if inflated in index else ("corrupted", None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sends", type=int, default=2000, help="sync sends per turn (A)")
    ap.add_argument("--size", type=int, default=256, help="body bytes (A)")
    ap.add_argument("--repeat", type=int, default=3, help="turns of each client, interleaved (A)")
    ap.add_argument("--loss-sends", type=int, default=300, help="sends across the kill (B)")
    ap.add_argument("--loss-deadline", type=float, default=180.0, help="wall s to wait for every acked message (B)")
    ap.add_argument("--skip", choices=("latency", "loss"), help="leave one part out")
    ap.add_argument("--out", type=Path, help="run directories and client logs (default: a new temporary one)")
    ap.add_argument("--json", type=Path, help="write the results here as JSON")
    args = ap.parse_args()
    if args.sends <= WARMUP + 1:
        ap.error(f"--sends must be more than {WARMUP + 1} (the first {WARMUP} of each turn are warm-up)")
    out = args.out or Path(tempfile.mkdtemp(prefix="rmqemu-real-client-bench-"))
    log(f"output in {out}")
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(),
                              "python": platform.python_version(), "sends": args.sends, "size": args.size}
    procs: list[NodeProcess] = []
    try:
        if args.skip != "latency":
            result["latency"] = bench_latency(args, out, procs)
        if args.skip != "loss":
            result["loss"] = bench_loss(args, out, procs)
    finally:
        for proc in procs:
            stop_process(proc)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
