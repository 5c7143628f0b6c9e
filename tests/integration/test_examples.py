"""The copyable example suite (docs/examples/) passes as a user runs it: from a directory
outside this repository, against the installed package, under ``pytest -n 2``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def test_example_suite_passes_outside_the_repository(tmp_path: Path) -> None:
    suite = tmp_path / "my-suite"
    shutil.copytree(EXAMPLES, suite)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", str(suite)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "4 passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


FAILING_TEST = '''
import json, pathlib

def test_fails_while_a_broker_is_paused(start_cluster, tmp_path):
    c = start_cluster({"name": "failing", "timing": {"scale": 0.01}, "namesrvs": 1,
                       "brokers": [{"name": "broker-a"}], "duration": "600s"})
    c.pause("broker-a-0")
    pathlib.Path(OUT).write_text(str(c.run_dir))
    assert False, "the test fails with a paused node"
'''


def test_a_failing_user_test_leaves_no_process_behind(tmp_path: Path) -> None:
    from rmqemu.emulator.testing import process_alive, run_processes

    suite, out = tmp_path / "suite", tmp_path / "run_dir.txt"
    suite.mkdir()
    (suite / "test_failing.py").write_text(f"OUT = {str(out)!r}\n" + FAILING_TEST)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "the test fails with a paused node" in proc.stdout, proc.stdout[-3000:]
    assert "rmqemu run directories" in proc.stdout and out.read_text() in proc.stdout  # where to look
    procs = run_processes(Path(out.read_text()))
    assert len(procs) == 2  # the namesrv and the broker were spawned ...
    assert not [p for p in procs if process_alive(*p)]  # ... and none outlived the failed test
    kinds = (Path(out.read_text()) / "faults.jsonl").read_text()
    assert '"run.stop"' in kinds and '"run.drain"' not in kinds  # stopped without the drain
