"""The copyable real-client example (docs/examples/real-clients/) runs as a user runs it: run.sh,
from a copy outside the repository, brings a cluster up with `rmqemu up`, runs app.js (ali-ons)
through a master's kill and restart, stops the cluster and writes the report. Nothing acked is
lost, the report names the application as ``client@<pid>``, and no process of the run is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from rmqemu.emulator.testing import kill_survivors, process_alive, run_processes
from tests.faults.live import run_cli, wait_until
from tests.realclients.alions import ali_ons_dir

pytestmark = [pytest.mark.integration, pytest.mark.spark]  # `rmqemu report` starts Spark

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "real-clients"
SUMMARY_KEYS = {"sent", "acked", "failed", "received", "lost"}
RUN_TIMEOUT_S = 300.0


def summary_of(stdout: str) -> dict[str, Any]:
    """app.js's last line of JSON: {"sent", "acked", "failed", "received", "lost"}."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            data = json.loads(line)
            if SUMMARY_KEYS <= set(data):
                return data
    pytest.fail(f"app.js printed no summary line:\n{stdout[-4000:]}")


def run_script(script: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """bash run.sh in its own process group, which is killed (by its id) if it overruns."""
    proc = subprocess.Popen(["bash", str(script)], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"run.sh overran {RUN_TIMEOUT_S:.0f}s\nstdout:\n{out[-4000:]}\nstderr:\n{err[-4000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_run_sh_survives_a_master_kill_and_reports_the_application(tmp_path: Path) -> None:
    example = tmp_path / "real-clients"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("node_modules", "target", "runs"))
    assert not list(example.rglob("test_*.py"))  # docs/examples is a pytest suite of its own
    runs = tmp_path / "runs"
    env = dict(os.environ)
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # this venv's rmqemu
        "NODE_PATH": str(ali_ons_dir() / "node_modules"),  # instead of `npm install` in the copy
        "TOPOLOGY": str(REPO / "topologies" / "real-clients.yaml"),
        "RUNS": str(runs),
        # ~6 s of sends; run.sh kills broker-a-0 1 s in, after `rmqemu status` and with `rmqemu kill`
        # (two commands: seconds on a loaded host, so the sends outlast them), back 3 s later
        "COUNT": "120", "INTERVAL_MS": "50", "KILL_AFTER_S": "1", "RESTART_AFTER": "3s",
    })
    env.pop("NAMESRV_ADDR", None)
    cwd = tmp_path / "elsewhere"  # run.sh works from any directory
    cwd.mkdir()
    run: Path | None = None
    started = time.monotonic()
    try:
        proc = run_script(example / "run.sh", cwd, env)
        seconds = time.monotonic() - started
        if (runs / "latest").exists():
            run = (runs / "latest").resolve()
        output = f"stdout:\n{proc.stdout[-6000:]}\nstderr:\n{proc.stderr[-4000:]}"
        assert proc.returncode == 0, output
        assert run is not None and f"is up: {run}" in proc.stdout, output
        print(f"run.sh took {seconds:.1f}s")

        summary = summary_of(proc.stdout)
        assert summary["lost"] == 0 and summary["acked"] > 0, summary
        assert summary["sent"] == 120 == summary["acked"] + summary["failed"], summary
        lines = proc.stdout.splitlines()
        killed = next(i for i, line in enumerate(lines) if line.startswith("i1: kill broker-a-0"))
        assert killed < next(i for i, line in enumerate(lines) if line.startswith("[app] all sent")), output

        metrics = json.loads((run / "report" / "metrics.json").read_text())
        assert (run / "report" / "report.html").exists()
        clients = [c["client"] for c in metrics["staleness"]["clients"]]
        real = [c for c in clients if c.startswith("client@")]
        assert real, clients
        where = [line.split() for line in proc.stdout.splitlines() if line.startswith("report:")]
        assert where == [["report:", str(run / "report" / "report.html")]], output  # run.sh says where it is

        assert f"(it is {real[0]})" in proc.stdout, output  # run.sh named app.js as the report does

        # `rmqemu down` ran: the supervisor and every node of the run have exited, and so has app.js
        supervisor = json.loads((run / "supervisor.json").read_text())
        assert supervisor["state"] == "down", supervisor
        procs = [(supervisor["pid"], supervisor["create_time"]), *run_processes(run)]
        wait_until(lambda: not any(process_alive(*p) for p in procs), 30, "every process of the run to exit")
        for name in real:
            pid = int(name.removeprefix("client@"))
            assert pid != os.getpid() and not _alive(pid), f"{name} still running"
    finally:
        if run is None and (runs / "latest").exists():
            run = (runs / "latest").resolve()
        if run is not None and (run / "manifest.json").exists():
            run_cli("down", "--run", str(run), cwd=tmp_path)  # a no-op when run.sh already did it
            kill_survivors(run_processes(run))


def _alive(pid: int) -> bool:
    """True while a process with this pid runs and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
