"""Reading a run: broken lines are counted per file and dropped, never fatal; a bad
manifest or a missing events dir is one ``RunInputError`` naming the file."""
from __future__ import annotations

import json

import pytest

from rmqemu.errors import RunInputError
from reports.load import event_paths, load_run
from reports.manifest import parse_manifest, read_manifest
from tests.reports.runlog import exit_, start, write_run


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    root = write_run(tmp_path_factory.mktemp("load"),
                     [start(1000, "pg-1-0", "producer"), exit_(3000, "pg-1-0", code=0),
                      start(1500, "namesrv-0", "namesrv")],
                     raw_tail={"pg-1-0": '{"node": "pg-1-0", "kind": "send"}\n{"ts": 3100, "node": "pg-1-0", "ki',
                               "namesrv-0": "\x00\x01 not json\n"})
    return load_run(spark, str(root))


def test_broken_lines_counted_per_file(run):
    # pg-1-0: a line without ts and a truncated last line; namesrv-0: garbage.
    assert run.bad_lines == {"pg-1-0.jsonl": 2, "namesrv-0.jsonl": 1}
    assert run.event_count == 3
    assert (run.run_start, run.run_end) == (1000.0, 3000.0)


def test_good_events_keep_their_fields(run):
    rows = {r["node"]: r for r in run.events.filter("kind = 'node.start'").collect()}
    assert rows["pg-1-0"]["role"] == "producer" and rows["pg-1-0"]["ts"] == 1000.0
    assert rows["namesrv-0"]["file"] == "namesrv-0.jsonl"


def test_manifest_scale_from_topology_when_absent():
    m = parse_manifest(json.dumps({"topology": {"timing": {"scale": 0.5}}, "nodes": {}}), "m.json", "run-x")
    assert (m.scale, m.run) == (0.5, "run-x")


@pytest.mark.parametrize("text, problem", [
    ("[1, 2]", "expected a JSON object"),
    ('{"nodes": {}}', "missing 'scale'"),
    ('{"scale": 0}', "'scale' must be a number > 0"),
    ('{"scale": 1, "nodes": []}', "'nodes' must map"),
    ('{"scale": 1, "started_ms": "x"}', "'started_ms' must be a number"),
    ('{"scale": ', "not valid JSON"),
])
def test_bad_manifest_named(text, problem):
    with pytest.raises(RunInputError, match="^m.json: " + problem):
        parse_manifest(text, "m.json", "r")


def test_missing_files_named(tmp_path):
    with pytest.raises(RunInputError, match=f"^{tmp_path / 'nope'}: run directory does not exist"):
        read_manifest(None, str(tmp_path / "nope"))
    with pytest.raises(RunInputError, match=f"^{tmp_path / 'manifest.json'}: missing"):
        read_manifest(None, str(tmp_path))
    with pytest.raises(RunInputError, match=f"^{tmp_path / 'events'}: no \\*.jsonl event files"):
        event_paths(str(tmp_path))
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "a.jsonl").write_text("{}\n")
    (tmp_path / "faults.jsonl").mkdir()
    with pytest.raises(RunInputError, match=f"^{tmp_path / 'faults.jsonl'}: cannot read"):
        event_paths(str(tmp_path))


def test_broken_lines_name_their_file_as_it_is_spelled(spark, tmp_path):
    # Spark's _metadata.file_name percent-encodes the name; the count is keyed by the real one
    root = write_run(tmp_path, [start(1000, "pg-1-0", "producer"), exit_(3000, "pg-1-0", code=0)],
                     raw_tail={"pg 1+%": "not json\n"})
    assert load_run(spark, str(root)).bad_lines == {"pg 1+%.jsonl": 1}
