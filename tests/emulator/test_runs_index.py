"""``rmqemu runs``: the history of runs and sweeps read from what they left on disk."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rmqemu.emulator.cli.main import main
from rmqemu.emulator.runs_index import collect


def make_run(root: Path, name: str, started_ms: float, metrics: dict | None = None) -> Path:
    run = root / name
    (run / "report").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"name": name.split("-")[0], "started_ms": started_ms, "seed": 7,
                                                    "scale": 0.01, "nodes": {"namesrv-0": {}, "broker-a-0": {}}}))
    (run / "plan.json").write_text(json.dumps({"steps": [{"fault_id": "f1"}, {"fault_id": "f1"}, {"fault_id": "f2"}]}))
    if metrics is not None:
        (run / "report" / "metrics.json").write_text(json.dumps(metrics))
        (run / "report" / "report.html").write_text("<html></html>")
    return run


def test_runs_and_sweeps_newest_first_with_their_numbers(tmp_path: Path) -> None:
    make_run(tmp_path, "old-20260101-000000-aaaa", 1767225600000.0, {"misrouted": {"total": 3},
                                                             "consumption": {"lost": 0},
                                                             "staleness": {"clients_total": {"stale_ms": 12.345}},
                                                             "timing": {"healthy": True}})
    make_run(tmp_path, "new-20260102-000000-bbbb", 1767312000000.0)  # never reported
    sweep = tmp_path / "poll-20260103-120000"
    (sweep / "report").mkdir(parents=True)
    (sweep / "sweep.json").write_text(json.dumps({"grid": {"sweep": "poll", "cells": [{}, {}], "seeds": [1, 2]},
                                                  "created": "2026-01-03 12:00:00"}))
    (sweep / "c000-s1").mkdir()
    (sweep / "c000-s1" / "done.json").write_text("{}")
    (sweep / "report" / "runs.csv").write_text("run_id,verdict\nc000-s1,PASS\nc000-s2,FAIL\n")
    (tmp_path / "latest").symlink_to(tmp_path / "new-20260102-000000-bbbb")
    entries = collect(tmp_path)
    assert [(e.kind, e.path.name) for e in entries] == [
        ("sweep", "poll-20260103-120000"), ("run", "new-20260102-000000-bbbb"), ("run", "old-20260101-000000-aaaa")]
    sweep_e, new, old = entries
    assert sweep_e.verdict == "FAIL" and sweep_e.numbers == {"runs": "1/4", "failed": 1}
    assert new.numbers == {} and new.report is None and "2 nodes, 2 fault(s)" in new.detail
    assert old.numbers == {"misrouted": 3, "stale ms": 12.3, "lost": 0, "healthy": True} and old.report is not None


def test_the_command_lists_and_writes_an_escaped_index(tmp_path: Path) -> None:
    make_run(tmp_path, "x-20260101-000000-aaaa", 1.7e12, {"misrouted": {"total": 1}})
    manifest = tmp_path / "x-20260101-000000-aaaa" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"name": "x"', '"name": "<b>x</b>"'))
    result = CliRunner().invoke(main, ["runs", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "x-20260101-000000-aaaa" in result.output and "misrouted 1" in result.output
    page = (tmp_path / "index.html").read_text()
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert 'href="x-20260101-000000-aaaa/report/report.html"' in page
    missing = CliRunner().invoke(main, ["runs", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such directory" in missing.output
