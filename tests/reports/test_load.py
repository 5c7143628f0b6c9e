"""Reading a run: broken lines are counted per file and dropped, never fatal, by both readers
(in this process: :func:`reports.local.read_run`; Spark: :func:`reports.engine.analyse_runs`);
a bad manifest or a missing events dir is one ``RunInputError`` naming the file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqemu.errors import RunInputError
from rmqemu.reports.local import read_run
from rmqemu.reports.manifest import parse_manifest, read_manifest
from rmqemu.reports.rundir import event_paths
from tests.reports.runlog import exit_, start, write_run

#: pg-1-0: a line without ts and a truncated last line; namesrv-0: garbage.
BROKEN = {"pg-1-0.jsonl": 2, "namesrv-0.jsonl": 1}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("load"),
                     [start(1000, "pg-1-0", "producer"), exit_(3000, "pg-1-0", code=0),
                      start(1500, "namesrv-0", "namesrv")],
                     raw_tail={"pg-1-0": '{"node": "pg-1-0", "kind": "send"}\n{"ts": 3100, "node": "pg-1-0", "ki',
                               "namesrv-0": "\x00\x01 not json\n"})


def test_broken_lines_counted_per_file(run_dir):
    meta, _ = read_run(str(run_dir))
    assert meta.bad_lines == BROKEN
    assert meta.event_count == 3
    assert (meta.run_start, meta.run_end) == (1000.0, 3000.0)


@pytest.mark.spark
def test_spark_counts_the_same_broken_lines(spark, run_dir):
    from rmqemu.reports.engine import analyse_runs

    meta = analyse_runs(spark, [str(run_dir)])[0].meta
    assert meta.bad_lines == BROKEN
    assert meta.event_count == 3
    assert (meta.run_start, meta.run_end) == (1000.0, 3000.0)


def test_good_events_keep_their_fields(run_dir):
    _, table = read_run(str(run_dir))
    rows = {r["node"]: r for r in table.to_pylist() if r["kind"] == "node.start"}
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


def test_a_run_without_readable_events_is_named(tmp_path):
    root = write_run(tmp_path, [start(1000, "pg-1-0", "producer")])
    (root / "events" / "pg-1-0.jsonl").write_text("not json\n")  # its only line, broken
    with pytest.raises(RunInputError, match=f"^{root / 'events'}: no readable events"):
        read_run(str(root))


@pytest.fixture()
def odd_name(tmp_path) -> Path:
    """A run whose broken line sits in a file whose name percent-encoding changes."""
    return write_run(tmp_path, [start(1000, "pg-1-0", "producer"), exit_(3000, "pg-1-0", code=0)],
                     raw_tail={"pg 1+%": "not json\n"})


def test_broken_lines_name_their_file_as_it_is_spelled(odd_name):
    assert read_run(str(odd_name))[0].bad_lines == {"pg 1+%.jsonl": 1}


@pytest.mark.spark
def test_spark_names_the_file_of_a_broken_line_as_it_is_spelled(spark, odd_name):
    # Spark's _metadata.file_name percent-encodes the name; the count is keyed by the real one
    from rmqemu.reports.engine import analyse_runs

    assert analyse_runs(spark, [str(odd_name)])[0].meta.bad_lines == {"pg 1+%.jsonl": 1}
