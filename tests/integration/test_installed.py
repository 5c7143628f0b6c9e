"""rmqemu installed as a user installs it (built and installed, not editable) into a project
that has a ``reports`` package of its own: every module of rmqemu lives under ``rmqemu.``, so
the project's package cannot shadow rmqemu's, and the pytest plugin, ``start_cluster`` and
``metrics()`` work from the installed copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]

USER_TEST = '''
import rmqemu
from {PACKAGE} import WHO  # the project's own package, named as one of rmqemu's folders

TOPOLOGY = {TOPOLOGY!r}


def test_the_projects_package_and_rmqemus_side_by_side(start_cluster):
    assert WHO == "the project" and rmqemu.__file__.startswith({SITE!r}), rmqemu.__file__
    c = start_cluster(TOPOLOGY, duration="60s", faults=[])
    m = c.metrics(only=["consumption"])
    assert sum(t["acked"] for t in m["consumption"]["by_topic"]) > 0, m["consumption"]
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


def test_a_projects_own_reports_package_does_not_shadow_rmqemus(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is needed to list the repository's files")
    site = tmp_path / "site"
    src = _source_copy(tmp_path / "src")
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    assert (site / "rmqemu" / "reports" / "templates").is_dir() and not (site / "reports").exists()
    project = tmp_path / "project"
    (project / "reports").mkdir(parents=True)
    (project / "reports" / "__init__.py").write_text('WHO = "the project"\n')
    (project / "test_mine.py").write_text(USER_TEST.format(
        PACKAGE="reports", TOPOLOGY=str(ROOT / "topologies" / "quickstart.yaml"), SITE=str(site)))
    env = {**os.environ, "PYTHONPATH": str(site)}  # the installed copy, ahead of the editable one
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "1 passed" in out.stdout
    # a sweep's kept analyses are versioned by the installed copy's own sources
    kept = subprocess.run([sys.executable, "-c", "from rmqemu.reports import stored; print(*stored._SOURCES)"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert all(p.startswith(str(site)) for p in kept.stdout.split()), kept.stdout
