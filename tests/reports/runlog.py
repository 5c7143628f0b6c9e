"""Hand-made run directories for the report tests (docs/design.md §6 events)."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

SCALE = 0.01


def ev(ts: float, node: str, kind: str, **fields: Any) -> dict[str, Any]:
    """One event line."""
    return {"ts": ts, "node": node, "kind": kind, **fields}


def start(ts: float, node: str, role: str, **fields: Any) -> dict[str, Any]:
    return ev(ts, node, "node.start", role=role, pid=1000, **fields)


def exit_(ts: float, node: str, **fields: Any) -> dict[str, Any]:
    return ev(ts, node, "node.exit", **fields)


def topic(ts: float, node: str, name: str, perm: int = 6, queues: int = 4, how: str = "admin") -> dict[str, Any]:
    broker, bid = node.rsplit("-", 1)
    return ev(ts, node, "broker.topic", broker=broker, broker_id=int(bid), topic=name,
              read_queues=queues, write_queues=queues, perm=perm, how=how)


def croute(ts: float, node: str, name: str, brokers: list[str], queues: int = 1) -> dict[str, Any]:
    pq = [{"broker": b, "queue_id": q} for b in brokers for q in range(queues)]
    return ev(ts, node, "client.route", topic=name, source="namesrv-0", publish_queues=pq, changed=True)


def nroute(ts: float, node: str, name: str, brokers: list[str], masters: list[str] | None = None,
           perm: int = 6, write: int = 4) -> dict[str, Any]:
    qd = [{"broker": b, "read": write, "write": write, "perm": perm} for b in brokers]
    return ev(ts, node, "ns.route", topic=name, queue_datas=qd,
              masters=brokers if masters is None else masters)


def send(ts: float, node: str, name: str, broker: str | None, queue_id: int | None = 0,
         outcome: str = "ok", msg_id: str = "m", latency_ms: float = 1.0, **fields: Any) -> dict[str, Any]:
    return ev(ts, node, "send", msg_id=msg_id, topic=name, broker=broker, queue_id=queue_id,
              attempt=1, outcome=outcome, code=0, latency_ms=latency_ms, group="pg-1", **fields)


def fault(ts: float, kind: str, fault_id: str, fault_name: str, targets: list[str],
          **params: Any) -> dict[str, Any]:
    return {"ts": ts, "node": "injector", "kind": kind, "fault_id": fault_id, "fault": fault_name,
            "targets": targets, "params": params}


def manifest(nodes: dict[str, dict[str, Any]], scale: float = SCALE, run: str = "r1") -> dict[str, Any]:
    return {"run": run, "name": "hand-made", "seed": 42, "scale": scale, "started_ms": 0,
            "duration_s": 240, "nodes": nodes, "topology": {"timing": {"scale": scale}}}


def broker_node(name: str, auto: bool = False) -> dict[str, Any]:
    broker, bid = name.rsplit("-", 1)
    return {"role": "broker", "broker": broker, "broker_id": int(bid), "cluster": "DefaultCluster",
            "autoCreateTopicEnable": auto}


def write_run(root: Path, events: list[dict[str, Any]], faults: list[dict[str, Any]] = (),
              nodes: dict[str, dict[str, Any]] | None = None, raw_tail: dict[str, str] | None = None,
              scale: float = SCALE) -> Path:
    """Write ``root`` as a run dir: events split per node, faults.jsonl, manifest.json.
    ``raw_tail`` appends raw text (e.g. a truncated line) to a node's file."""
    (root / "events").mkdir(parents=True, exist_ok=True)
    per: dict[str, list[str]] = defaultdict(list)
    for e in events:
        per[e["node"]].append(json.dumps(e))
    for node, lines in per.items():
        (root / "events" / f"{node}.jsonl").write_text("\n".join(lines) + "\n")
    for node, text in (raw_tail or {}).items():
        with open(root / "events" / f"{node}.jsonl", "a") as fh:
            fh.write(text)
    (root / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))
    if nodes is None:
        nodes = {}
        for e in events:
            if e["kind"] == "node.start":
                info = {"role": e["role"]}
                if e["role"] == "broker":
                    info = broker_node(e["node"])
                nodes[e["node"]] = info
    (root / "manifest.json").write_text(json.dumps(manifest(nodes, scale)))
    return root


def metrics_of(root: Path) -> dict[str, Any]:
    """The metrics.json document of a hand-made run, analysed in this process (no JVM, nothing
    written): :func:`reports.local.analyse_dirs` then :func:`reports.metrics.document`."""
    from rmqemu.reports.local import analyse_dirs
    from rmqemu.reports.metrics import document

    return document(analyse_dirs([str(root)])[0])


def by(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    """The single row of ``rows`` whose fields equal ``match``."""
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, rows)
    return found[0]
