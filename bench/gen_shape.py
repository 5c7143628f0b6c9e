"""The synthetic cluster ``gen_events.py`` models: its nodes, topics, groups and timings, and
the manifest.json of a generated run."""

from __future__ import annotations

from typing import Any

SCALE = 0.01
POLL, REGISTER, EXPIRY, REBALANCE, TIMEOUT = 300.0, 300.0, 1200.0, 200.0, 30.0  # wall ms at SCALE
BROKERS = [f"broker-{c}" for c in "abcd"]
AUTO = {"broker-a", "broker-c"}  # autoCreateTopicEnable
TOPICS = {"T0": ["broker-a", "broker-b"], "T1": ["broker-b", "broker-c", "broker-d"],
          "T2": ["broker-a", "broker-d"], "T3": BROKERS}
QUEUES = {"T0": 4, "T1": 8, "T2": 4, "T3": 4, "NewTopic": 8}
PRODUCERS = [f"pg-1-{i}" for i in range(6)] + [f"pg-2-{i}" for i in range(2)]
GROUPS = {"cg-1": (["cg-1-0", "cg-1-1"], ["T0", "T1"]), "cg-2": (["cg-2-0", "cg-2-1"], ["T2", "T3"])}
NAMESRVS = ["namesrv-0", "namesrv-1"]



def topic_of(b: str) -> str:  # a topic the broker hosts, to test namesrv membership
    return next(t for t, bs in TOPICS.items() if b in bs)


def manifest(run: str, seed: int, duration_s: float) -> dict[str, Any]:
    nodes: dict[str, dict[str, Any]] = {n: {"role": "namesrv"} for n in NAMESRVS}
    for b in BROKERS:
        for bid in (0, 1):
            nodes[f"{b}-{bid}"] = {"role": "broker", "broker": b, "broker_id": bid, "cluster": "DefaultCluster",
                                   "autoCreateTopicEnable": b in AUTO}
    nodes.update({p: {"role": "producer", "group": p[:4]} for p in PRODUCERS})
    nodes.update({c: {"role": "consumer", "group": g} for g, (ms, _) in GROUPS.items() for c in ms})
    return {"run": run, "name": "bench-synthetic", "seed": seed, "scale": SCALE, "started_ms": 1_700_000_000_000,
            "duration_s": duration_s, "nodes": nodes, "topology": {"timing": {"scale": SCALE}}}
