"""The copyable example suite (docs/examples/) passes as a user runs it: from a directory outside
this repository, under ``pytest -n 2``, against rmqemu as a user installs it (built and installed,
not editable) into a project that has a ``reports`` package of its own. Every module of rmqemu
lives under ``rmqemu.``, so the project's package cannot shadow rmqemu's, and the pytest plugin,
``start_cluster`` and ``metrics()`` work from the installed copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"

# Beside the example suite in the user's project: its own ``reports`` package next to rmqemu's.
SHADOW_TEST = '''
import rmqemu
import rmqemu.reports  # rmqemu's report package, not the project's
from {PACKAGE} import WHO  # the project's own package, named as one of rmqemu's folders


def test_the_projects_package_and_rmqemus_side_by_side():
    assert WHO == "the project"
    assert rmqemu.__file__.startswith({SITE!r}), rmqemu.__file__
    assert rmqemu.reports.__file__.startswith({SITE!r}), rmqemu.reports.__file__
'''


def _source_copy(dest: Path) -> Path:
    """The repository's tracked files (a build writes into its source tree: not into ours)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if name.startswith("tests/"):
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.mark.spark
def test_example_suite_passes_outside_the_repository_against_the_installed_package(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is needed to list the repository's files")
    site = tmp_path / "site"
    src = _source_copy(tmp_path / "src")
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    assert (site / "rmqemu" / "reports" / "templates").is_dir() and not (site / "reports").exists()
    project = tmp_path / "my-project"
    suite = project / "tests"
    shutil.copytree(EXAMPLES, suite)
    (project / "reports").mkdir()
    (project / "reports" / "__init__.py").write_text('WHO = "the project"\n')
    (suite / "test_installed_copy.py").write_text(SHADOW_TEST.format(PACKAGE="reports", SITE=str(site)))
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{project}"}  # the installed copy, ahead of the editable one
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", str(suite)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "5 passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
    # a sweep's kept analyses are versioned by the installed copy's own sources
    kept = subprocess.run([sys.executable, "-c", "from rmqemu.reports import stored; print(*stored._SOURCES)"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert all(p.startswith(str(site)) for p in kept.stdout.split()), kept.stdout


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
