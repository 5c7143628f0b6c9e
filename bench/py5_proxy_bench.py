"""RocketMQ 5's Python client through the proxy against the C++ client over remoting (issue 42).

    .venv/bin/python bench/py5_proxy_bench.py [--sends 2000] [--size 256] [--repeat 3] [--json out.json]

One cluster at scale 1.0 (namesrv-0, broker-a master only, one proxy, remoting on) serves both
clients; every turn has fresh topics of 4 queues on broker-a. Each round runs one turn of each
client, one after the other, the first alternating (py5 cpp, cpp py5, ...), so both see the same
minutes of the host. A turn:

1. send: ``--sends`` sync sends of ``--size`` bytes from one producer, no consumer running. The
   first ``WARMUP`` are left out (route look-up, connections). Latency p50/p90/p99 as the client
   script times each send, and sends/s over the completions.
2. drain: a consumer of a new group reads that backlog: messages/s from its first delivery to
   its last, and the seconds from its process's start to the last delivery.
3. live: a consumer subscribes and receives a primer message; then a producer sends ``--sends``
   more. Each message's send-to-consume latency is the consumer's timestamp of it minus the start
   of its send (one host clock); messages/s is over the consumer's deliveries (first delivery of
   each), beside the producer's sends/s in the same phase (both clients share the 2 cores with
   the cluster: sends are slower with a consumer running).

py5: rocketmq-python-client 5.1.2 (tests/realclients/py5client.py): ``py5/producer.py``
(``Producer.send``) and ``py5/push_consumer.py`` (a PushConsumer, 4 consumption threads, each
message acked by the client after its listener). cpp: rocketmq-client-cpp 2.1.0 through PyPI's
rocketmq-python-cvs (tests/realclients/pyclient.py): ``cpp/normal.py`` as producer (``send_sync``)
and consumer (a concurrent PushConsumer). The scripts measure; nothing here asserts a timing.
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
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqemu import emulator  # noqa: E402
from tests.realclients import py5client  # noqa: E402
from tests.realclients.drivers import NodeProcess, start_cpp, start_py5, stop_process, wait_for  # noqa: E402

WARMUP = 50
SIDES = ("py5", "cpp")
Lines = list[dict[str, Any]]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))]


def spread(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(pct(values, 50), 3), "p90": round(pct(values, 90), 3),
            "p99": round(pct(values, 99), 3), "mean": round(statistics.fmean(values), 3)}


def rate(stamps_ms: list[float]) -> float:
    """Events a second from the first of ``stamps_ms`` to the last."""
    s = sorted(stamps_ms)
    return round((len(s) - 1) / ((s[-1] - s[0]) / 1000), 1) if len(s) > 1 and s[-1] > s[0] else 0.0


def topology(rounds: int) -> dict[str, Any]:
    topics = [f"{side}{k}{phase}" for k in range(rounds) for side in SIDES for phase in "SL"]
    return {"name": "bench-py5-proxy", "seed": 42, "timing": {"scale": 1.0}, "namesrvs": 1,
            "brokers": [{"name": "broker-a", "slaves": 0}],
            "topics": [{"name": t, "brokers": ["broker-a"], "queues": 4} for t in topics],
            "proxies": {"count": 1}, "remoting": True, "duration": "7200s"}


class Side:
    """One client's scripts: ``send`` runs a producer to its end and returns its send lines as
    ``{id, start_ms, end_ms, ms, ok}``; ``consumer`` starts one; ``delivered`` reads its
    deliveries as ``{id, ts}``."""

    def __init__(self, name: str, c: emulator.Cluster, body: bytes, out: Path) -> None:
        self.name, self.c, self.body, self.out = name, c, body, out / name

    def send(self, topic: str, count: int) -> tuple[Lines, float]:
        started = time.monotonic()
        if self.name == "py5":
            run = py5client.run_script("producer.py", {"endpoints": self.c.endpoints, "topic": topic, "count": count,
                                                       "bodies_hex": [self.body.hex()], "keys": ["bench"]}, 600)
            sent = [{"id": x.get("message_id"), "start_ms": x["ts"] - x["ms"], "end_ms": x["ts"], "ms": x["ms"],
                     "ok": x["ok"]} for x in run.events("sent")]
        else:
            cfg = {"role": "producer", "nameSrv": self.c.namesrv_addr, "topic": topic, "group": f"PG_{topic}",
                   "bodies": [base64.b64encode(self.body).decode()], "count": count}
            proc = start_cpp(cfg, self.out, f"producer-{topic}", "normal.py")
            try:
                wait_for(lambda: proc.poll() is not None, 600, f"the C++ producer of {topic}", 0.02)
            finally:
                stop_process(proc)
            sent = [{"id": x.get("msgId"), "start_ms": x["born"], "end_ms": x["ts"], "ms": x["ms"], "ok": x["ok"]}
                    for x in proc.lines() if x.get("action") == "sent"]
        if len(sent) != count or not all(x["ok"] for x in sent):
            raise RuntimeError(f"{self.name}: {sum(x['ok'] for x in sent)} of {count} sends ok to {topic}")
        return sent, time.monotonic() - started

    def consumer(self, topic: str, group: str) -> NodeProcess:
        if self.name == "py5":
            return start_py5("push_consumer.py", {"endpoints": self.c.endpoints, "topic": topic, "group": group,
                                                  "duration_s": 900}, self.out, f"consumer-{topic}")
        return start_cpp({"role": "consumer", "nameSrv": self.c.namesrv_addr, "topic": topic, "group": group},
                         self.out, f"consumer-{topic}", "normal.py")

    def delivered(self, proc: NodeProcess) -> Lines:
        if self.name == "py5":
            return [{"id": x["message_id"], "ts": x["ts"]} for x in proc.lines() if x.get("event") == "consumed"]
        return [{"id": x["msgId"], "ts": x["ts"]} for x in proc.lines() if x.get("action") == "consumed"]

    def ready(self, proc: NodeProcess) -> bool:
        return any(x.get("event") == "started" or x.get("ready") for x in proc.lines())


def wait_delivered(side: Side, proc: NodeProcess, want: Callable[[Lines], bool], what: str, timeout_s: float) -> Lines:
    def check() -> Lines | None:
        got = side.delivered(proc)
        if want(got):
            return got
        if proc.poll() is not None:
            raise RuntimeError(f"{side.name}'s consumer exited before {what}\n{proc.describe()}")
        return None
    return wait_for(check, timeout_s, what, 0.02, describe=proc.describe)


def turn(side: Side, k: int, sends: int) -> dict[str, Any]:
    """One client's three phases on its own two topics of round ``k``."""
    topic, live_topic = f"{side.name}{k}S", f"{side.name}{k}L"
    sent, send_s = side.send(topic, sends)
    kept = sent[WARMUP:]
    result: dict[str, Any] = {"send": {**spread([x["ms"] for x in kept]),
                                       "sends_per_s": rate([x["end_ms"] for x in kept]), "process_s": round(send_s, 2)}}
    started_ms = time.time() * 1000
    proc = side.consumer(topic, f"GD_{topic}")
    try:
        got = wait_delivered(side, proc, lambda g: len({x["id"] for x in g}) >= sends, "the backlog", 600)
    finally:
        stop_process(proc)
    firsts = sorted({x["id"]: x["ts"] for x in reversed(got)}.values())
    result["drain"] = {"messages_per_s": rate(firsts), "to_last_s": round((firsts[-1] - started_ms) / 1000, 2),
                       "deliveries": len(got)}
    proc = side.consumer(live_topic, f"GL_{live_topic}")
    try:
        wait_for(lambda: side.ready(proc), 60, f"{side.name}'s live consumer", describe=proc.describe)
        primer, _ = side.send(live_topic, 1)
        wait_delivered(side, proc, lambda g: any(x["id"] == primer[0]["id"] for x in g), "the primer", 120)
        sent, _ = side.send(live_topic, sends)
        ids = {x["id"] for x in sent}
        got = wait_delivered(side, proc, lambda g: ids <= {x["id"] for x in g}, "the live messages", 600)
    finally:
        stop_process(proc)
    first = {}
    for x in got:
        first.setdefault(x["id"], x["ts"])
    e2e = [first[x["id"]] - x["start_ms"] for x in sent[WARMUP:]]
    result["live"] = {**spread(e2e), "messages_per_s": rate([first[x["id"]] for x in sent[WARMUP:]]),
                      "sends_per_s": rate([x["end_ms"] for x in sent[WARMUP:]]), "duplicates": len(got) - len(first)}
    return result


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        out[side] = {phase: {key: round(statistics.median(r[phase][key] for r in mine), 3) for key in mine[0][phase]}
                     for phase in ("send", "drain", "live")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sends", type=int, default=2000, help="sync sends per phase")
    ap.add_argument("--size", type=int, default=256, help="body bytes")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each one turn of each client")
    ap.add_argument("--out", type=Path, help="run directory and client logs (default: a new temporary one)")
    ap.add_argument("--json", type=Path, help="write the results here as JSON")
    args = ap.parse_args()
    if args.sends <= WARMUP + 1:
        ap.error(f"--sends must be more than {WARMUP + 1} (the first {WARMUP} of each phase are warm-up)")
    out = args.out or Path(tempfile.mkdtemp(prefix="rmqemu-py5-proxy-bench-"))
    log(f"output in {out}")
    body = random.Random(42).randbytes(args.size)
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(),
                              "python": platform.python_version(), "machine": platform.machine(),
                              "sends": args.sends, "size": args.size, "warmup_excluded": WARMUP}
    py5client.python()  # installed before any timing
    runs: list[dict[str, Any]] = []
    with emulator.Cluster(topology(args.repeat), run_dir=out / "run") as c:
        sides = {name: Side(name, c, body, out) for name in SIDES}
        for k in range(args.repeat):
            for name in (SIDES if k % 2 == 0 else SIDES[::-1]):
                at = time.strftime("%H:%M:%S")
                res = turn(sides[name], k, args.sends)
                runs.append({"side": name, "round": k + 1, "at": at, **res})
                s, d, v = res["send"], res["drain"], res["live"]
                log(f"round {k + 1} {name}: send p50 {s['p50']} p90 {s['p90']} p99 {s['p99']} ms, "
                    f"{s['sends_per_s']}/s; drain {d['messages_per_s']}/s; live p50 {v['p50']} p90 {v['p90']} "
                    f"p99 {v['p99']} ms, {v['messages_per_s']}/s (sent {v['sends_per_s']}/s)")
        result["role_errors"] = len(c.events("node.error"))
    result["runs"], result["median"] = runs, medians(runs)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
