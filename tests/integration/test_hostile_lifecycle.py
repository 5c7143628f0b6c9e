"""Issue 13, signals and a dead supervisor: SIGTERM stops `launch` like Ctrl-C (exit 143, a
`node.exit` per node, `run.stop`); after a SIGKILL of the `up` supervisor `status` and `down`
answer at once and leave no process; with the run directory deleted `down` still stops what runs.

Every process is checked by pid and create_time; whatever a failing test left alive is killed
by pid in a finally block, never by name. Each test has its own XDG_RUNTIME_DIR, so the
supervisor records of parallel tests never meet.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rmqemu.emulator.testing import kill_survivors, read_events, run_processes
from rmqemu.emulator.testing import process_alive as alive
from tests.faults.live import rmqemu, wait_until

TOPO = """
name: hostile
timing: {scale: 0.01}
namesrvs: 1
brokers:
  - {name: broker-a, slaves: 1}
producers:
  - {group: pg, topics: [T]}
duration: 100000s
"""


def env_for(tmp_path: Path) -> dict[str, str]:
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700, exist_ok=True)
    return dict(os.environ, XDG_RUNTIME_DIR=str(xdg))


def start_launch(tmp_path: Path, topo: str = TOPO) -> tuple[subprocess.Popen, Path]:
    """``rmqemu launch`` of ``topo`` in the background, in its own run directory."""
    (tmp_path / "t.yaml").write_text(topo)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(rmqemu("launch", "t.yaml", "--run-dir", str(run_dir), "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=env_for(tmp_path))
    return proc, run_dir


@contextmanager
def launched(tmp_path: Path, topo: str = TOPO) -> Iterator[tuple[subprocess.Popen, Path, list[tuple[int, float]]]]:
    """:func:`start_launch`, then whatever the test did: the launcher and every node of the run
    it recorded (fill the list once the run started) are gone afterwards."""
    proc, run_dir = start_launch(tmp_path, topo)
    procs: list[tuple[int, float]] = []
    try:
        yield proc, run_dir, procs
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_survivors(procs)


def cli(tmp_path: Path, *args: str, timeout: float = 25) -> subprocess.CompletedProcess:
    """Run one command; ``timeout`` (under the old 30 s RPC wait) makes a hang fail the test."""
    return subprocess.run(rmqemu(*args), capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env=env_for(tmp_path))


def sup_identity(run_dir: Path) -> tuple[int, float]:
    state = json.loads((run_dir / "supervisor.json").read_text())
    return state["pid"], state["create_time"]


def up(tmp_path: Path) -> Path:
    (tmp_path / "t.yaml").write_text(TOPO)
    out = cli(tmp_path, "up", "t.yaml", "--root", "runs", timeout=120)
    assert out.returncode == 0, out.stderr
    return (tmp_path / "runs" / "latest").resolve()


def records(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "xdg" / "rmqemu").glob("*.json"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_stops_launch_like_ctrl_c(tmp_path: Path, sig: int) -> None:
    with launched(tmp_path) as (proc, run_dir, procs):
        wait_until(lambda: (run_dir / "faults.jsonl").exists()
                   and "run.start" in (run_dir / "faults.jsonl").read_text(),
                   90, "the cluster to start")
        procs[:] = run_processes(run_dir)
        assert len(procs) == 4 and all(alive(*p) for p in procs)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=90)
        assert proc.returncode == 128 + sig, err
        assert f"interrupted ({signal.Signals(sig).name}): faults healed, nodes stopped" in err
        assert "Traceback" not in err
        exits = read_events(run_dir, "node.exit")
        assert sorted(e["node"] for e in exits) == ["broker-a-0", "broker-a-1", "namesrv-0", "pg-0"]
        assert all(e.get("code") == 0 for e in exits), exits  # every node shut down gracefully
        assert len(read_events(run_dir, "run.stop")) == 1
        assert not any(alive(*p) for p in procs)


def test_dead_supervisor_status_and_down_answer_at_once(tmp_path: Path) -> None:
    procs: list[tuple[int, float]] = []
    sup: tuple[int, float] | None = None
    try:
        run_dir = up(tmp_path)
        procs, sup = run_processes(run_dir), sup_identity(run_dir)
        assert len(records(tmp_path)) == 1  # the record outside the run
        os.kill(sup[0], signal.SIGKILL)  # the supervisor this test started
        wait_until(lambda: not alive(*sup), 30, "the supervisor to die")

        status = cli(tmp_path, "status", "--root", "runs")
        assert status.returncode == 1 and "Traceback" not in status.stderr
        assert "the cluster is dead" in status.stderr and f"supervisor pid {sup[0]} is gone" in status.stderr
        assert json.loads((run_dir / "supervisor.json").read_text())["state"] == "dead"  # stale "up" cleared

        down = cli(tmp_path, "down", "--root", "runs")
        assert down.returncode == 0, down.stderr
        assert "cleaned up after a dead supervisor" in down.stdout
        wait_until(lambda: not any(alive(*p) for p in procs), 30, "every node to be gone")
        assert records(tmp_path) == []

        again = cli(tmp_path, "kill", "broker-a-0", "--run", str(run_dir))  # a verb: refused at once
        assert again.returncode == 1 and "the cluster is dead, not up" in again.stderr
    finally:
        kill_survivors(procs + ([sup] if sup else []))


@pytest.mark.parametrize("deleted", ["run", "root"])
def test_down_stops_a_live_supervisor_whose_run_directory_was_deleted(tmp_path: Path, deleted: str) -> None:
    procs: list[tuple[int, float]] = []
    sup: tuple[int, float] | None = None
    try:
        run_dir = up(tmp_path)
        procs, sup = run_processes(run_dir), sup_identity(run_dir)
        assert all(alive(*p) for p in procs + [sup])
        # nodes may still write into it: what is left is no run
        shutil.rmtree(run_dir if deleted == "run" else tmp_path / "runs", ignore_errors=True)
        assert not (run_dir / "manifest.json").exists()

        by = ["--run", str(run_dir)] if deleted == "run" else ["--root", "runs"]  # `down` alone: the root's runs
        down = cli(tmp_path, "down", *by)
        assert down.returncode == 0, down.stderr
        assert f"run directory missing; supervisor pid {sup[0]} stopped" in down.stdout
        wait_until(lambda: not any(alive(*p) for p in procs + [sup]), 30, "the supervisor and its nodes to exit")
        assert records(tmp_path) == []
        nothing = cli(tmp_path, "down", *by)  # nothing left to stop: bad input
        assert nothing.returncode == 2 and "not a run directory" in nothing.stderr
    finally:
        kill_survivors(procs + ([sup] if sup else []))


def test_supervisor_records_are_kept_in_a_private_directory(tmp_path: Path) -> None:
    """A record holds pids that `down` signals: it must not live where another user could write."""
    procs: list[tuple[int, float]] = []
    try:
        run_dir = up(tmp_path)
        procs = run_processes(run_dir)
        (rec,) = records(tmp_path)
        assert rec.parent.stat().st_mode & 0o777 == 0o700 and rec.stat().st_mode & 0o777 == 0o600
        data = json.loads(rec.read_text())
        assert (data["run_dir"] == str(run_dir)
                and set(data["nodes"]) == {"broker-a-0", "broker-a-1", "namesrv-0", "pg-0"})
        assert cli(tmp_path, "down", "--root", "runs", timeout=120).returncode == 0
        assert records(tmp_path) == []
    finally:
        kill_survivors(procs)


def test_sigterm_to_the_up_supervisor_stops_its_cluster_gracefully(tmp_path: Path) -> None:
    procs: list[tuple[int, float]] = []
    sup: tuple[int, float] | None = None
    try:
        run_dir = up(tmp_path)
        procs, sup = run_processes(run_dir), sup_identity(run_dir)
        os.kill(sup[0], signal.SIGTERM)  # what a process manager sends
        wait_until(lambda: not any(alive(*p) for p in procs + [sup]), 60, "the supervisor and its nodes to exit")
        assert json.loads((run_dir / "supervisor.json").read_text())["state"] == "down"
        exits = read_events(run_dir, "node.exit")
        assert sorted(e["node"] for e in exits) == ["broker-a-0", "broker-a-1", "namesrv-0", "pg-0"]
        assert all(e.get("code") == 0 for e in exits), exits
        assert len(read_events(run_dir, "run.stop")) == 1
        assert records(tmp_path) == []
    finally:
        kill_survivors(procs + ([sup] if sup else []))


def test_signals_during_the_shutdown_are_reported_honestly(tmp_path: Path) -> None:
    """Three Ctrl-C in a row: the second is only acknowledged, the third cuts the shutdown short.
    Whatever was cut, every node has a node.exit and the message names the nodes that were killed.
    The namesrv is frozen first (SIGSTOP, by its pid), so the brokers' graceful stop waits for their
    UNREGISTER_BROKER (6 s at scale 1): the shutdown is still going when the signals land, however
    fast it would otherwise be."""
    with launched(tmp_path, TOPO.replace("scale: 0.01", "scale: 1.0")) as (proc, run_dir, procs):
        wait_until(lambda: (run_dir / "faults.jsonl").exists()
                   and "run.start" in (run_dir / "faults.jsonl").read_text(),
                   90, "the cluster to start")
        procs[:] = run_processes(run_dir)
        namesrv = json.loads((run_dir / "manifest.json").read_text())["nodes"]["namesrv-0"]
        assert (namesrv["pid"], namesrv["create_time"]) in procs
        os.kill(namesrv["pid"], signal.SIGSTOP)
        for _ in range(3):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.1)  # spacing, not a timing assertion: three separate signals
        _out, err = proc.communicate(timeout=90)
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert "already stopping" in err
        last = {e["node"]: e for e in read_events(run_dir, "node.exit")}
        assert sorted(last) == ["broker-a-0", "broker-a-1", "namesrv-0", "pg-0"]
        killed = sorted(n for n, e in last.items() if e.get("signal") == signal.SIGKILL)
        if killed:
            assert f"{4 - len(killed)} of 4 nodes stopped gracefully, SIGKILL for {', '.join(killed)}" in err
        else:
            assert "nodes stopped;" in err
        assert not any(alive(*p) for p in procs)


def test_sigterm_heals_an_active_fault_before_the_nodes_stop(tmp_path: Path) -> None:
    paused = TOPO + "faults:\n  - {at: 1s, pause: broker-a-1, duration: 50000s}\n"
    with launched(tmp_path, paused) as (proc, run_dir, procs):
        wait_until(lambda: (run_dir / "faults.jsonl").exists() and read_events(run_dir, "fault.start"),
                   90, "the pause to start")
        procs[:] = run_processes(run_dir)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=90)
        assert proc.returncode == 143 and "faults healed, nodes stopped" in err, err
        (start,) = read_events(run_dir, "fault.start")
        ends = read_events(run_dir, "fault.end")
        assert [e["fault_id"] for e in ends] == [start["fault_id"]]
        assert sorted(e["node"] for e in read_events(run_dir, "node.exit")) == \
            ["broker-a-0", "broker-a-1", "namesrv-0", "pg-0"]
        assert not any(alive(*p) for p in procs)
