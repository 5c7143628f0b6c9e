"""The RocketMQ 5 Python client's install and scripts without a server: the installed venv imports
the client at the locked versions; each script, pointed at a loopback port nobody listens on,
starts, says what failed in JSON lines, exits on its own within a bound and leaves no process;
a failed pip install names its command and pip's words and leaves nothing half-made behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.realclients import cache, py5client

pytestmark = pytest.mark.integration


@pytest.fixture
def dead_endpoint() -> str:
    """``127.0.0.1:<port>`` of a port this test bound and closed: connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


def test_the_installed_client_imports_at_the_locked_versions() -> None:
    python = py5client.python()
    target = python.parents[1]
    marker = cache.read_marker(target)
    assert (marker["package"], marker["version"], marker["lock"]) == (py5client.PACKAGE, py5client.VERSION,
                                                                      list(py5client.LOCK))
    def norm(pin: str) -> str:
        return pin.replace("_", "-").lower()
    assert {norm(pin) for pin in py5client.LOCK} <= {norm(line) for line in marker["freeze"]}, marker["freeze"]
    loaded = json.loads(subprocess.run([str(python), "-c", py5client.PROBE], capture_output=True, text=True,
                                       timeout=60, check=True, cwd=target).stdout)
    assert {"Producer", "SimpleConsumer", "PushConsumer", "ClientConfiguration"} <= set(loaded["exports"])
    assert loaded["service"] == "apache.rocketmq.v2.MessagingService"
    pins = dict(pin.split("==") for pin in py5client.LOCK)
    assert (loaded["protobuf"], loaded["grpcio"]) == (pins["protobuf"], pins["grpcio"])


def assert_gone(run: py5client.ScriptRun) -> None:
    """The script ended by itself (no timeout) and nothing of its process group is left."""
    assert run.returncode is not None, f"killed at the timeout after {run.seconds}s: {run.lines}\n{run.stderr}"
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pid, 0)
    assert not run.not_json, run.not_json


def test_the_producer_reports_each_failed_send(dead_endpoint: str, tmp_path: Path) -> None:
    """The client starts without its route (it logs the failure) and fails each send: one line each."""
    run = py5client.run_script("producer.py", {"endpoints": dead_endpoint, "topic": "T", "count": 2,
                                               "type": "normal"}, timeout_s=60, home=tmp_path)
    assert_gone(run)
    assert run.returncode == 0, run
    sent = run.events("sent")
    assert [(s["i"], s["ok"]) for s in sent] == [(0, False), (1, False)], run.lines
    assert all("failed to fetch topic:T route" in s["error"] for s in sent), sent
    assert run.events("done")[0] | {"ts": 0} == {"event": "done", "sent": 0, "failed": 2, "checks": 0, "ts": 0}
    assert (tmp_path / "logs" / "rocketmq_python" / "rocketmq_client.log").exists()  # under our HOME


def test_the_simple_consumer_reports_failed_receives_until_its_time_is_up(dead_endpoint: str) -> None:
    run = py5client.run_script("simple_consumer.py", {"endpoints": dead_endpoint, "topic": "T", "group": "G",
                                                      "duration_s": 1.0}, timeout_s=60)
    assert_gone(run)
    assert run.returncode == 0 and run.events("started"), run
    errors = run.events("receive_error")
    assert errors and all("failed to fetch topic:T route" in e["error"] for e in errors), run.lines
    assert not run.events("received") and run.lines[-1]["event"] == "done", run.lines


def test_a_script_killed_at_its_timeout_leaves_no_process(dead_endpoint: str) -> None:
    run = py5client.run_script("simple_consumer.py", {"endpoints": dead_endpoint, "topic": "T", "group": "G",
                                                      "duration_s": 120}, timeout_s=3)
    assert run.returncode is None and run.seconds < 30, run
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pid, 0)

