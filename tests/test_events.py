"""The event registry (:mod:`rmqemu.events`): docs/events.md is rendered from it, every writer
refuses what it does not list, and the writers' literal kinds and the registry match both ways."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from rmqemu import events
from rmqemu.emulator.launcher.run_dir import append_event
from rmqemu.emulator.node.io import EventLog
from rmqemu.emulator.roles.common.base import Emit
from rmqemu.event_doc import REGENERATE
from rmqemu.event_kinds import SECTIONS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "events.md"
#: The kinds of docs/design.md §6 and the fields the Spark metrics are defined on.
DESIGN_KINDS = {
    "node.start": {"role", "pid"}, "node.exit": {"role", "pid", "code", "signal"},
    "ns.broker": {"broker_addr", "broker", "broker_id", "change"}, "ns.route": {"topic", "queue_datas", "masters"},
    "broker.topic": {"broker", "broker_id", "topic", "read_queues", "write_queues", "perm", "how"},
    "client.route": {"topic", "source", "publish_queues", "changed"},
    "send": {"msg_id", "topic", "broker", "queue_id", "attempt", "outcome", "code", "latency_ms"},
    "rebalance": {"group", "topic", "cid", "cids", "strategy", "allocated"},
    "pull": {"group", "topic", "broker", "queue_id", "code"},
    "consume": {"group", "topic", "broker", "queue_id", "msg_ids"},
    "fault.start": {"fault_id", "fault", "targets", "params"}, "fault.end": {"fault_id", "fault", "targets", "params"},
}
SEND = {"ts": 1.0, "node": "pg-1-0", "kind": "send", "local_ms": 1.0, "msg_id": "m", "topic": "T", "broker": "b",
        "queue_id": 0, "attempt": 1, "outcome": "ok", "code": 0, "latency_ms": 1.5, "broker_id": 0, "group": "pg-1",
        "mode": "sync"}


# ----------------------------------------------------------------------------- the registry


def test_docs_events_md_is_rendered_from_the_registry() -> None:
    assert DOC.read_text() == events.markdown(), (
        f"docs/events.md is not what rmqemu/event_kinds.py renders: regenerate it with `{REGENERATE}`")


def test_design_kinds_and_fields_are_registered_and_not_extensions() -> None:
    for kind, fields in DESIGN_KINDS.items():
        decl = events.KINDS[kind]
        assert not decl.ext, kind
        for name in fields:
            assert not decl.field(name).ext, f"{kind}.{name}"
    assert events.KINDS["client.route"].field("subscribe_queues").ext
    assert events.KINDS["send"].field("mode").ext


def test_names_are_unique_and_one_type_per_field_name() -> None:
    kinds = [k.name for s in SECTIONS for k in s.kinds]
    assert len(kinds) == len(set(kinds))
    for kind in events.KINDS.values():
        names = [f.name for f in kind.fields]
        assert len(names) == len(set(names)), kind.name
        assert not set(names) & events.COMMON_NAMES, kind.name
    columns = events.columns()  # raises if a name had two types
    assert {"mode", "subscribe_queues", "ts", "local_ms"} <= set(columns)


def test_rendered_field_lists_are_unambiguous() -> None:
    """Fields are joined with "; " in a table cell: a meaning must not hold one (nor a "|")."""
    for kind in events.KINDS.values():
        for f in kind.fields:
            assert ";" not in f.meaning and "|" not in f.meaning, f"{kind.name}.{f.name}"


# ----------------------------------------------------------------------------- checks


def test_check_refuses_an_unregistered_kind_or_field_with_a_clear_message() -> None:
    events.check("send", {"msg_id": "m", "mode": "sync"})
    events.check("run.stop", {})
    with pytest.raises(ValueError, match=r"event kind 'made.up' is not registered in rmqemu/event_kinds.py"):
        events.check("made.up", {})
    with pytest.raises(ValueError, match=r"'send': field\(s\) surprise, ts not registered"):
        events.check("send", {"msg_id": "m", "surprise": 1, "ts": 1.0})
    events.check_line({"ts": 1.0, "node": "launcher", "kind": "run.stop"})
    with pytest.raises(ValueError, match="needs a string 'kind'"):
        events.check_line({"ts": 1.0, "node": "launcher"})


def test_problems_checks_types_required_fields_and_nulls() -> None:
    assert events.problems(SEND) == []
    assert events.problems({**SEND, "latency_ms": None, "code": None, "broker": None, "queue_id": None}) == []
    bad = {**SEND, "queue_id": "3", "attempt": None, "surprise": 1}
    del bad["ts"]
    assert sorted(events.problems(bad)) == sorted([
        "send.surprise: not registered", "send.ts: required, missing", "send.attempt: null, not allowed",
        "send.queue_id: expected int, got '3'"])
    assert events.problems({"kind": "made.up"}) == ["kind 'made.up': not registered"]
    route = {"ts": 1.0, "node": "pg-1-0", "kind": "client.route", "topic": "T", "source": "namesrv-0", "group": "g",
             "publish_queues": [{"broker": "broker-a", "queue_id": 0}, {"broker": "broker-a"}, ["broker-a", 1]],
             "changed": 1}
    assert events.problems(route) == ["client.route.publish_queues[1].queue_id: required, missing",
                                      "client.route.publish_queues[2]: expected an object (queue), got ['broker-a', 1]",
                                      "client.route.changed: expected bool, got 1"]
    fault = {"ts": 1.0, "node": "injector", "kind": "fault.start", "fault_id": "f1", "fault": "partition",
             "targets": ["a"], "params": {"links": [["a", "b"], ["a", 1]], "mode": "groups", "oneway": False,
                                          "shape": 1}}
    assert events.problems(fault) == ["fault.start.params.shape: not registered",
                                      "fault.start.params.links[1][1]: expected str, got 1"]


def test_older_runs_queue_pairs_are_upgraded_to_the_current_types_and_nothing_else() -> None:
    old = {"ts": 1.0, "node": "cg-1-0", "kind": "rebalance", "group": "g", "topic": "T", "cid": "c", "cids": ["c"],
           "strategy": "AVG", "allocated": [["broker-a", 0], ["broker-b", 3]]}
    new = events.upgrade(old)
    assert new["allocated"] == [{"broker": "broker-a", "queue_id": 0}, {"broker": "broker-b", "queue_id": 3}]
    assert events.problems(new) == [] and old["allocated"] == [["broker-a", 0], ["broker-b", 3]]  # a copy
    assert events.upgrade(new) is new and events.upgrade(SEND) is SEND  # current lines: as they are
    odd = {**old, "allocated": [["broker-a"]], "cids": [1]}
    assert events.problems(events.upgrade(odd)) == [
        "rebalance.cids[0]: expected str, got 1",
        "rebalance.allocated[0]: expected an object (queue), got ['broker-a']"]


# ----------------------------------------------------------------------------- the writers refuse


def test_emit_refuses_an_unregistered_kind_or_field() -> None:
    assert Emit("consume", {"group": "g", "msg_ids": []}).kind == "consume"
    with pytest.raises(ValueError, match="'probe.reply' is not registered"):
        Emit("probe.reply", {"code": 0})
    with pytest.raises(ValueError, match=r"field\(s\) msgids not registered"):
        Emit("consume", {"group": "g", "msgids": []})


def test_the_node_event_log_and_the_launcher_refuse_and_write_nothing(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "n.jsonl", "n", lambda: 5.0, host=lambda: 7.0)
    log.write("node.error", {"error": "KeyError: 'x'"})
    with pytest.raises(ValueError, match="not registered"):
        log.write("node.oops", {})
    with pytest.raises(ValueError, match=r"field\(s\) why not registered"):
        log.write("control.refused", {"why": "token"})
    log.close()
    assert [json.loads(x)["kind"] for x in (tmp_path / "n.jsonl").read_text().splitlines()] == ["node.error"]
    faults = tmp_path / "faults.jsonl"
    append_event(faults, {"ts": 1.0, "node": "launcher", "kind": "run.stop"})
    with pytest.raises(ValueError, match=r"'run.stop': field\(s\) at not registered"):
        append_event(faults, {"ts": 2.0, "node": "launcher", "kind": "run.stop", "at": 2})
    assert len(faults.read_text().splitlines()) == 1


# ----------------------------------------------------------------------------- the source, both ways


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def written_in_source() -> dict[str, set[str]]:
    """``{kind: field names}`` of every place in emulator/ and faults/ that writes an event with a
    literal kind: ``Emit("k", {...})``, ``<...>.events.write("k", {...})``, ``_record("k", fault,
    name=...)`` and ``{"kind": "k", ...}`` dicts. Field names: the literal keys and keywords."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "emulator").rglob("*.py")) + sorted((ROOT / "faults").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            kind, names = None, set()
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                is_emit = isinstance(func, ast.Name) and func.id == "Emit"
                is_log = (isinstance(func, ast.Attribute) and func.attr == "write" and len(node.args) == 2
                          and isinstance(func.value, ast.Attribute) and func.value.attr == "events")
                is_record = isinstance(func, ast.Attribute) and func.attr == "_record"
                if is_emit or is_log or is_record:
                    kind = _literal(node.args[0])
                    if len(node.args) > 1 and isinstance(node.args[1], ast.Dict):
                        names = {k for k in map(_literal, node.args[1].keys) if k}
                    names |= {kw.arg for kw in node.keywords if kw.arg} if is_record else set()
            elif isinstance(node, ast.Dict):
                keys = [_literal(k) for k in node.keys]
                if "kind" in keys:
                    kind = _literal(node.values[keys.index("kind")])
                    names = {k for k in keys if k} - events.COMMON_NAMES
            if kind is not None:
                found.setdefault(kind, set()).update(names)
    return found


def test_every_kind_the_source_writes_is_registered_and_every_registered_kind_is_written() -> None:
    source = written_in_source()
    assert set(source) - set(events.KINDS) == set(), "written but not registered in rmqemu/event_kinds.py"
    assert set(events.KINDS) - set(source) == set(), "registered but written nowhere (a stale entry?)"
    for kind, names in source.items():
        events.check(kind, names)  # the literal field names of those call sites
    assert {"reason", "restarted", "error"} <= source["fault.end"]  # the scan sees fields
    assert {"broker_addr", "broker", "broker_id", "change"} <= source["ns.broker"]


def test_last_event_ms_is_the_latest_ts_of_the_files_tail(tmp_path: Path) -> None:
    """A killed node's ``node.exit`` is never before its own last line (docs/design.md §7): the
    launcher reads that line's ``ts`` from the tail of its file, past a cut or a torn line."""
    from rmqemu.emulator.launcher.run_dir import last_event_ms

    path = tmp_path / "broker-a-0.jsonl"
    assert last_event_ms(path) is None  # no file yet
    path.write_bytes(b"")
    assert last_event_ms(path) is None
    lines = [json.dumps({"ts": 1000.0 + i, "node": "broker-a-0", "kind": "x", "pad": "\u00e9" * 50})
             for i in range(2000)]
    path.write_text("\n".join(lines) + "\n" + '{"ts": 99999, "node": "broker-a-0", "kind"', encoding="utf-8")
    assert last_event_ms(path, tail_bytes=4096) == 2999.0  # the torn last line is skipped
    path.write_text(lines[0] + "\n", encoding="utf-8")
    assert last_event_ms(path) == 1000.0  # a file shorter than the tail: its first line counts
