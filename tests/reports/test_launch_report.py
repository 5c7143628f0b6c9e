"""``rmqemu launch --report`` as a user runs it (a subprocess, a real cluster): the report's
Spark session starts once the nodes have stopped and the report is written, then the run is judged
by the topology's ``expect:`` (one rule that cannot hold: exit 1, docs/design.md §8); the report's
JVM has exited with it (``reports.session.stop_session``), so no Java process outlives the command."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
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
    proc = subprocess.Popen(
        [sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()", "launch", str(topo),
         "--run-dir", str(run_dir), "--report", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    out, jvms = _run_watching_java(proc)
    assert out.returncode == 1, out.stderr[-3000:]
    assert jvms, "no Java child of the launch was seen: the report's JVM is its child while it runs"
    assert not [p for p in jvms if _running(p)], f"the report's JVM outlived the launch: {jvms}"
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


def _run_watching_java(proc: subprocess.Popen[str], timeout: float = 900,
                       ) -> tuple[subprocess.CompletedProcess[str], list[psutil.Process]]:
    """Wait for ``proc`` (its pipes drained on threads, so a full pipe never blocks it) and return
    what it printed, with every Java process seen among its descendants meanwhile (polled)."""
    outputs: dict[int, str] = {}
    readers = [threading.Thread(target=lambda i=i, s=s: outputs.__setitem__(i, s.read()), daemon=True)
               for i, s in enumerate((proc.stdout, proc.stderr))]
    for r in readers:
        r.start()
    seen: dict[int, psutil.Process] = {}
    parent, deadline = psutil.Process(proc.pid), time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            seen.update({c.pid: c for c in parent.children(recursive=True) if c.pid not in seen and "java" in c.name()})
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for r in readers:
        r.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, outputs[0], outputs[1]), list(seen.values())


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
