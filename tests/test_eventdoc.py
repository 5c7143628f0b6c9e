"""The checker that keeps docs/events.md complete finds what a run wrote and the page omits."""
from __future__ import annotations

import json
from pathlib import Path

from tests.eventdoc import documented, undocumented


def write(run: Path, *events: dict) -> Path:
    (run / "events").mkdir(parents=True)
    (run / "events" / "n.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def test_design_kinds_are_documented_with_their_design_fields() -> None:
    doc = documented()
    assert {"msg_id", "topic", "broker", "queue_id", "attempt", "outcome", "code", "latency_ms"} <= doc["send"]
    assert {"fault_id", "fault", "targets", "params"} <= doc["fault.end"]
    assert {"publish_queues", "subscribe_queues", "source", "changed"} <= doc["client.route"]
    for kind in ("node.start", "node.exit", "broker.topic", "ns.broker", "ns.route", "pull", "consume",
                 "rebalance", "fault.start"):
        assert kind in doc


def test_unknown_kind_and_unknown_field_are_reported(tmp_path: Path) -> None:
    run = write(tmp_path / "r",
                {"ts": 1.0, "node": "n", "kind": "send", "local_ms": 1.0, "msg_id": "m", "surprise": 1},
                {"ts": 2.0, "node": "n", "kind": "made.up"},
                {"ts": 3.0, "node": "n", "kind": "consume", "group": "g", "msg_ids": []})
    assert undocumented(run) == {"send": {"surprise"}, "made.up": set()}
