"""Issue 13, bad command lines: each is refused with exit 2 and a short message, no traceback,
nothing started (no run directory appears)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

QUICKSTART = str(Path(__file__).resolve().parents[2] / "topologies" / "quickstart.yaml")

#: argv -> a phrase the message must contain
BAD_COMMAND_LINES: list[tuple[list[str], str]] = [
    (["launch", QUICKSTART, "--duration", "5x"], "--duration: expected a duration"),
    (["launch", QUICKSTART, "--duration", "-5s"], "--duration: expected a duration >= 0"),
    (["launch", QUICKSTART, "--duration", "0"], "--duration: must be > 0"),
    (["launch", QUICKSTART, "--seed", "9" * 30], "--seed: must be <="),
    (["launch", QUICKSTART, "--seed", "abc"], "'abc' is not a valid integer"),
    (["launch", QUICKSTART, "--nemesis", "bogus"], "unknown nemesis kind(s) bogus"),
    (["launch", QUICKSTART, "--nemesis", "kill", "--interval", "5x"], "expected a duration"),
    (["launch", "--replay", "missing-run"], "not a run directory"),
    (["launch", QUICKSTART, "--run-dir", "/proc/no/such/dir"], "cannot create the run directory"),
    (["launch", "missing.yaml"], "file not found"),
    (["kill", ""], "kill: an empty target"),
    (["pause", "broker-a-0", "--duration", "zz"], "--duration: expected a duration"),
    (["status", "--run", "missing-run"], "not a run directory"),
    (["down", "--run", "missing-run"], "not a run directory"),
    (["faults", "--run", "missing-run"], "not a run directory"),
    (["admin", "topic-list", "--run", "missing-run"], "not a run directory"),
    (["validate"], "Missing argument"),
]


@pytest.mark.parametrize("argv,phrase", BAD_COMMAND_LINES, ids=[" ".join(a)[-40:] for a, _ in BAD_COMMAND_LINES])
def test_bad_command_line_exits_2_with_one_short_message(tmp_path: Path, argv: list[str], phrase: str) -> None:
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    out = subprocess.run([sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()", *argv],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env=dict(os.environ, XDG_RUNTIME_DIR=str(xdg)))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and phrase in out.stderr, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(errors) == 1 and len(out.stderr.splitlines()) <= 5, out.stderr
    assert not (tmp_path / "runs").exists()  # nothing was started
