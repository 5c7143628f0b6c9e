"""A run's analysis is kept in <run>/analysis.json and reused while the code and the run's files
are unchanged (reports.stored); a sweep re-run then analyses only what is missing."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rmqemu.emulator.sweep.analysis import analyse, unanalysed
from rmqemu.emulator.sweep.runner import RunResult
from rmqemu.reports import stored
from tests.sweep.test_analysis import metrics, spec  # noqa: F401  (the fixture)


def run_dir(root: Path) -> Path:
    (root / "events").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"run": root.name, "scale": 0.01, "nodes": {}}))
    (root / "events" / "pg-1-0.jsonl").write_text('{"ts": 1.0, "node": "pg-1-0", "kind": "node.start"}\n')
    return root


def test_a_document_is_given_back_until_a_file_or_the_code_changes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    run = str(run_dir(tmp_path / "r"))
    assert stored.load(run) is None
    assert stored.save(run, {"events": 1})
    assert stored.load(run) == {"events": 1}
    with open(Path(run) / "events" / "pg-1-0.jsonl", "a") as fh:  # the run's logs grew
        fh.write('{"ts": 2.0, "node": "pg-1-0", "kind": "node.exit"}\n')
    assert stored.load(run) is None
    stored.save(run, {"events": 2})
    monkeypatch.setattr(stored, "VERSION", "other code")
    assert stored.load(run) is None


def test_a_torn_or_foreign_file_is_not_a_document(tmp_path: Path) -> None:
    run = str(run_dir(tmp_path / "r"))
    (Path(run) / stored.FILE).write_text('{"version": ')
    assert stored.load(run) is None
    (Path(run) / stored.FILE).write_text("[1, 2]")
    assert stored.load(run) is None
    assert not stored.save(str(tmp_path / "not-a-run"), {"events": 1})


def test_a_sweep_rerun_analyses_only_the_runs_without_a_kept_analysis(spec, tmp_path: Path) -> None:  # noqa: F811
    results = [RunResult(r.run_id, run_dir(tmp_path / r.run_id), 0, False) for r in spec.runs()]
    asked: list[list[str]] = []

    def compute(_spark: Any, run_dirs: list[str]) -> dict[str, dict[str, Any]]:
        asked.append(run_dirs)
        return {d: metrics(1) for d in run_dirs}

    first = analyse(None, spec, results, tmp_path / "report", compute)
    assert len(asked[0]) == 4 and unanalysed(results) == []
    os.remove(results[1].run_dir / stored.FILE)
    second = analyse(None, spec, results, tmp_path / "report", compute)
    assert asked[1:] == [[str(results[1].run_dir)]]
    assert [r["verdict"] for r in second.rows] == [r["verdict"] for r in first.rows] == ["PASS"] * 4
    analyse(None, spec, results, tmp_path / "report", compute)
    assert len(asked) == 2  # nothing left to compute: no Spark job at all
