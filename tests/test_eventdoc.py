"""The checker that holds real runs to the event registry finds what a run wrote and the
registry omits or types otherwise."""
from __future__ import annotations

import json
from pathlib import Path

from tests.eventdoc import contract_problems, kinds_written, unregistered


def write(run: Path, *events: dict) -> Path:
    (run / "events").mkdir(parents=True)
    (run / "events" / "n.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def test_unknown_kind_and_unknown_field_are_reported(tmp_path: Path) -> None:
    run = write(tmp_path / "r",
                {"ts": 1.0, "node": "n", "kind": "send", "local_ms": 1.0, "msg_id": "m", "surprise": 1},
                {"ts": 2.0, "node": "n", "kind": "made.up"},
                {"ts": 3.0, "node": "n", "kind": "consume", "group": "g", "msg_ids": []})
    assert unregistered(run) == {"send": {"surprise"}, "made.up": set()}
    assert kinds_written(run) == {"send", "made.up", "consume"}


def test_wrong_types_and_missing_fields_are_reported_once_each_with_a_count(tmp_path: Path) -> None:
    good = {"node": "n", "kind": "consume", "group": "g", "topic": "T", "broker": "b", "queue_id": 0, "msg_ids": ["m"]}
    run = write(tmp_path / "r", {**good, "ts": 1.0}, {**good, "ts": 2.0, "queue_id": "0"},
                {**good, "ts": 3.0, "queue_id": "1"}, {"ts": 4.0, "node": "n", "kind": "consume"})
    assert contract_problems(run) == [
        "consume.broker: required, missing (1 line(s))", "consume.group: required, missing (1 line(s))",
        "consume.msg_ids: required, missing (1 line(s))", "consume.queue_id: expected int, got '0' (1 line(s))",
        "consume.queue_id: expected int, got '1' (1 line(s))", "consume.queue_id: required, missing (1 line(s))",
        "consume.topic: required, missing (1 line(s))"]
    assert contract_problems(write(tmp_path / "ok", {**good, "ts": 1.0, "local_ms": 1.0})) == []
