"""``rmqemu launch --report`` as a user runs it (a subprocess, a real cluster): the report's
Spark session starts once the nodes have stopped and the report is written, then the run is judged by the topology's ``expect:`` (one rule that cannot hold: exit 1, docs/design.md §8)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOPOLOGY = """
name: launch-report
timing: {scale: 0.01}
namesrvs: 1
brokers:
  - {name: broker-a}
topics:
  - {name: OrderTopic, brokers: [broker-a], queues: 2}
producers:
  - {group: pg-1, topics: [OrderTopic], rate: 2, size: 64, mode: sync}
consumers:
  - {group: cg-1, instances: 1, subscribe: [OrderTopic]}
duration: 300s
expect:
  consumption.lost: 0
  sends.ok: {max: 0}
"""


@pytest.mark.integration
def test_launch_with_report_writes_the_report_and_judges_the_run(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text(TOPOLOGY)
    run_dir = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()", "launch", str(topo),
         "--run-dir", str(run_dir), "--report", "--no-progress"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "] starting Spark (local[*])" in out.stderr  # by the report, once the run is over
    assert "1 of 2 expectation(s) held (from the run's topology)" in out.stderr
    assert "FAIL sends.ok = " in out.stderr and "over the max of 0" in out.stderr
    metrics = json.loads((run_dir / "report" / "metrics.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert metrics["run"] == manifest["run"]
    assert metrics["sends"]["ok"] > 0
    page = (run_dir / "report" / "report.html").read_text()
    assert 'class="verdict FAIL"' in page and "1 of 2 expectation(s) failed" in page
    assert out.stdout.splitlines()[-1] == str(run_dir / "report" / "report.html")
    assert Path(out.stdout.splitlines()[0]) == run_dir
