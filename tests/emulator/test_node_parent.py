"""A node dies with its launcher (emulator/node/parent.py): it arms the parent-death signal itself,
since the launcher runs nothing in the child before exec (a vfork spawn runs no fork handler)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rmqemu.emulator.node.parent import LAUNCHER_PID_ENV, die_with_launcher

PROBE = "from rmqemu.emulator.node.parent import die_with_launcher; print(die_with_launcher())"


def test_a_node_started_by_its_launcher_arms_and_carries_on() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, LAUNCHER_PID_ENV: str(os.getpid())},
                         capture_output=True, text=True, timeout=30, start_new_session=True)
    assert out.stdout.strip() == "True", out.stderr


def test_a_node_whose_launcher_is_not_its_parent_must_exit() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, LAUNCHER_PID_ENV: "1"},
                         capture_output=True, text=True, timeout=30, start_new_session=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_process_started_by_hand_arms_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LAUNCHER_PID_ENV, raising=False)
    assert die_with_launcher()
