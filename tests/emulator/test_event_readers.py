"""Every reader of a run's event files sees every line a node wrote, whatever text a real
client put in it (a client id, a group name, an error message), and a torn line from a kill
costs that line only (docs/design.md §6, "JSON-lines files")."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.cli.interrupts import _exit_events
from rmqemu.emulator.launcher.errorwatch import role_errors
from rmqemu.emulator.launcher.lagwatch import TailReader
from rmqemu.emulator.launcher.run_dir import append_event, last_event_ms
from rmqemu.emulator.launcher.run_events import read_events
from rmqemu.emulator.node.io import EventLog
from rmqemu.reports.local import read_run
from tests import strategies
from tests.reports.runlog import broker_node, manifest

text = strategies.text(min_size=1, max_size=30)


def write_node(run: Path, client_ids: list[str], groups: list[str], error: str, start_ms: float) -> int:
    """A broker's log as its runtime writes it: heartbeats of real clients named by the test."""
    clock = iter(range(10**6))
    log = EventLog(run / "events" / "broker-a-0.jsonl", "broker-a-0", lambda: 0.0,
                   host=lambda: start_ms + next(clock))
    log.write("node.start", {"role": "broker", "pid": 7, "addr": "tcp://127.0.0.1:1", "broker": "broker-a",
                             "broker_id": 0})
    for cid in client_ids:
        log.write("client.heartbeat", {"client_id": cid, "producer_groups": groups, "consumer_groups": groups,
                                       "code": 0}, node=f"client@{cid}")
    log.write("node.error", {"error": error})
    log.close()
    return log.written


@settings(max_examples=40, deadline=None)
@given(st.lists(text, min_size=1, max_size=6), st.lists(text, max_size=3), text)
def test_every_reader_sees_every_line_whatever_a_client_named(client_ids, groups, error) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        (run / "events").mkdir()
        (run / "manifest.json").write_text(json.dumps(manifest({"broker-a-0": broker_node("broker-a-0")})))
        written = write_node(run, client_ids, groups, error, 1000.0)
        path = run / "events" / "broker-a-0.jsonl"
        path.write_bytes(path.read_bytes() + '{"ts": 9999, "kind": "node.st\u2028'.encode()[:-1])  # killed mid-line
        append_event(path, {"ts": 5000.0, "node": "broker-a-0", "kind": "node.exit", "role": "broker", "pid": 7,
                            "signal": 9})

        got = read_events(run)
        assert len(got) == written + 1
        assert [e["client_id"] for e in got if e["kind"] == "client.heartbeat"] == client_ids
        assert all(e["consumer_groups"] == groups for e in got if e["kind"] == "client.heartbeat")
        assert role_errors(run) == {"broker-a-0": 1}
        assert [e["error"] for e in TailReader(path).lines('"node.error"')] == [error]
        assert last_event_ms(path) == 5000.0 and last_event_ms(path, tail_bytes=160) == 5000.0
        assert [e["pid"] for e in _exit_events(run)["broker-a-0"]] == [7]

        meta, table = read_run(str(run))  # the report's reader (pyarrow, in a Spark task or here)
        assert meta.bad_lines == {"broker-a-0.jsonl": 1}  # the torn line, ended by the launcher's line
        assert table.column("client_id").drop_null().to_pylist() == client_ids


def test_a_restarted_node_starts_a_new_line_after_its_last_runs_torn_one(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    path = tmp_path / "events" / "n.jsonl"
    path.write_bytes(b'{"ts": 1.0, "node": "n", "kind": "node.start", "role": "broker", "pid": 7')
    log = EventLog(path, "n", lambda: 0.0, host=lambda: 2.0)
    log.write("node.start", {"role": "broker", "pid": 8})
    log.close()
    assert [e["pid"] for e in read_events(tmp_path)] == [8]
    assert path.read_bytes().count(b"\n") == 2  # the torn line ended, then ours
