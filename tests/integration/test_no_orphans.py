"""No process outlives its run: after Ctrl-C of `launch`, after SIGKILL of the launcher (after `down`:
tests/integration/test_faults_up.py).

Each test finds the run's node pids in its own manifest and checks them with psutil (pid plus
create_time, so a reused pid is not mistaken for a survivor); whatever a failing test left alive
is killed by pid in a finally block — never by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from rmqemu.emulator.launcher.run_dir import append_event
from rmqemu.emulator.node.clock import host_ms
from rmqemu.emulator.testing import kill_survivors, read_events
from rmqemu.emulator.testing import process_alive as alive
from rmqemu.emulator.testing import run_processes as node_procs
from tests.faults.live import rmqemu, wait_until

TOPO = """
name: orphans
timing: {scale: 0.01}
namesrvs: 1
brokers:
  - {name: broker-a, slaves: 1}
duration: 100000s
"""


def start_launch(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    topo = tmp_path / "t.yaml"
    topo.write_text(TOPO)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(rmqemu("launch", str(topo), "--run-dir", str(run_dir), "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    wait_until(lambda: (run_dir / "manifest.json").exists() and len(node_procs(run_dir)) == 3
               and all("addr" in n for n in json.loads((run_dir / "manifest.json").read_text())["nodes"].values()),
               60, "the cluster to start")
    return proc, run_dir


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_launcher_interrupted_or_killed_leaves_no_node(tmp_path: Path, how: str) -> None:
    proc, run_dir = start_launch(tmp_path)
    procs = node_procs(run_dir)
    try:
        assert all(alive(*p) for p in procs)
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        proc.wait(timeout=60)
        wait_until(lambda: not any(alive(*p) for p in procs), 60, "every node to exit")
        if how == "sigint":  # a graceful stop records every node's exit and says how to replay
            assert proc.returncode == 130
            err = proc.stderr.read().decode()
            assert "interrupted" in err and "seed 42" in err and f"--replay {run_dir}" in err
            exits = read_events(run_dir, kind="node.exit")
            assert len(exits) == 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_survivors(procs)


def test_launch_exits_3_when_a_node_dies_without_a_fault_or_a_role_raises(tmp_path: Path) -> None:
    """The run broke twice (docs/design.md §8): the slave killed behind the injector's back, and a
    ``node.error`` in the master's event file, as its runtime writes one when its role raises."""
    topo = tmp_path / "t.yaml"
    topo.write_text(TOPO.replace("duration: 100000s", "duration: 600s"))
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(rmqemu("launch", str(topo), "--run-dir", str(run_dir), "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    procs: list[tuple[int, float]] = []
    try:
        wait_until(lambda: (run_dir / "manifest.json").exists() and len(node_procs(run_dir)) == 3, 60, "start")
        procs = node_procs(run_dir)
        slave = json.loads((run_dir / "manifest.json").read_text())["nodes"]["broker-a-1"]
        os.kill(slave["pid"], signal.SIGKILL)  # not through the injector: an unexplained death
        append_event(run_dir / "events" / "broker-a-0.jsonl", {"ts": host_ms(), "node": "broker-a-0",
                                                               "kind": "node.error", "local_ms": host_ms(),
                                                               "error": "KeyError: 'caf\u00e9'"})
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 3  # the run broke (docs/design.md §8)
        assert "died without a fault: broker-a-1" in err and "seed" in err
        assert "error: broker-a-0's role raised KeyError: 'caf\u00e9': a bug in rmqemu" in err  # said as it came
        assert "role error(s), a bug in rmqemu: broker-a-0 (1)" in err
        exit_ev = read_events(run_dir, kind="node.exit", node="broker-a-1")
        assert exit_ev and exit_ev[0]["signal"] == signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_survivors(procs)
