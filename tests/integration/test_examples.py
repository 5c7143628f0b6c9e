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
