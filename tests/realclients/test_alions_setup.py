"""The real-client plumbing without a server: ali-ons installs once however many ask at once,
node loads it from NODE_PATH, and the programs in js/ report failures, stop when asked and leave
nothing behind (reuse and the cache's place: test_cache.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.realclients import alions
from tests.realclients.drivers import JS_DIR, NodeProcs, group_alive, stop_process, wait_exit, wait_for_line

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, read, closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_install_records_the_pinned_version() -> None:
    target = alions.ali_ons_dir()
    marker = json.loads((target / alions.MARKER).read_text())
    assert marker["packages"]["ali-ons"] == alions.ALI_ONS_VERSION


CHILD = """
import json, sys
from tests.realclients import alions, cache
installs = []
real_run = cache.subprocess.run
def counting_run(cmd, *a, **k):
    if "install" in cmd:
        installs.append(cmd)
    return real_run(cmd, *a, **k)
cache.subprocess.run = counting_run
path = alions.ali_ons_dir()
print(json.dumps({"path": str(path), "installs": len(installs)}))
"""


def test_concurrent_cold_install_runs_npm_once(tmp_path: Path) -> None:
    """Three processes ask for ali-ons in an empty cache at once: one installs, all get the same directory."""
    env = {**os.environ, "RMQEMU_NPM_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=alions.LOCK_TIMEOUT_S + 60)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    target = alions.install_dir(tmp_path / "cache")
    assert {r["path"] for r in results} == {str(target)}
    assert sum(r["installs"] for r in results) == 1
    assert alions.is_complete(target)
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".")], "temporary directories left"
    marker = json.loads((target / alions.MARKER).read_text())
    assert marker["packages"]["ali-ons"] == alions.ALI_ONS_VERSION and marker["install_seconds"] > 0


def test_node_loads_pinned_ali_ons_from_node_path(tmp_path: Path) -> None:
    script = ("const p = require('ali-ons/package.json'); const o = require('ali-ons');"
              "console.log(JSON.stringify({version: p.version, exports: Object.keys(o).sort()}))")
    env = {**os.environ, "NODE_PATH": str(alions.ali_ons_dir() / "node_modules")}
    out = subprocess.run([alions.node_path(), "-e", script], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert json.loads(out) == {"version": alions.ALI_ONS_VERSION, "exports": ["Consumer", "Message", "Producer"]}


def test_scripts_fail_clearly_without_ali_ons_or_with_a_bad_config(tmp_path: Path) -> None:
    cfg = json.dumps({"nameSrv": "127.0.0.1:1", "topic": "t", "producerGroup": "g"})
    env = {k: v for k, v in os.environ.items() if k != "NODE_PATH"}
    proc = subprocess.run([alions.node_path(), str(JS_DIR / "produce.js"), cfg], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "NODE_PATH" in json.loads(proc.stdout)["fatal"], proc
    env["NODE_PATH"] = str(alions.ali_ons_dir() / "node_modules")
    typo = json.dumps({"nameSrv": "127.0.0.1:1", "topic": "t", "consumerGroup": "g", "rebalanceIntervall": 1})
    proc = subprocess.run([alions.node_path(), str(JS_DIR / "consume.js"), typo], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "rebalanceIntervall" in json.loads(proc.stdout)["fatal"], proc


def test_producer_at_closed_ports_reports_every_send_failed(node_procs: NodeProcs) -> None:
    started = time.monotonic()
    proc = node_procs.producer({
        "nameSrv": f"127.0.0.1:{closed_port()};127.0.0.1:{closed_port()}", "topic": "RealClientsT",
        "producerGroup": "RealClientsPG", "count": 2, "sendTimeout": 1000, "connectTimeout": 1000,
        "close_timeout_ms": 2000, "tags": ["a", "b"],
    })
    done = wait_for_line(proc, lambda line: line.get("done") is True, timeout_s=30, what="the done line")
    assert wait_exit(proc, timeout_s=15) == 0, proc.describe()
    assert time.monotonic() - started < 40
    lines = proc.lines()
    assert lines[0]["ready"] is True and lines[0]["ali_ons_version"] == alions.ALI_ONS_VERSION
    assert len(lines[0]["nameSrv"]) == 2
    sends = [line for line in lines if "i" in line]
    assert [s["i"] for s in sends] == [0, 1]
    assert all(s["ok"] is False and s["error"] and len(s["sha256"]) == 64 for s in sends), sends
    assert (done["sent"], done["failed"], done["stopped"]) == (0, 2, False)
    assert not group_alive(proc.pid), "a process of the producer's group is still running"


def test_consumer_at_closed_port_stops_cleanly_when_asked(node_procs: NodeProcs) -> None:
    proc = node_procs.consumer({
        "nameSrv": [f"127.0.0.1:{closed_port()}"], "topic": "RealClientsT", "consumerGroup": "RealClientsCG",
        "rebalanceInterval": 500, "pollNameServerInterval": 500, "close_timeout_ms": 3000,
    })
    ready = wait_for_line(proc, lambda line: "ready" in line, timeout_s=30, what="the ready line")
    assert ready["ready"] is True and ready["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET"
    assert ready["clientId"].endswith(f"@{proc.pid}"), ready
    assert stop_process(proc, grace_s=15) == 0, proc.describe()
    done = proc.lines()[-1]
    assert done["done"] is True and done["reason"] == "stdin-eof" and done["received"] == 0, proc.describe()
    assert not group_alive(proc.pid)


def test_failed_install_raises_with_command_and_stderr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_npm = tmp_path / "npm"
    fake_npm.write_text("#!/bin/sh\necho 'npm ERR! code E404 (fake registry says no)' >&2\nexit 1\n")
    fake_npm.chmod(0o755)
    monkeypatch.setattr(alions, "npm_path", lambda: str(fake_npm))
    root = tmp_path / "cache"
    with pytest.raises(alions.RealClientSetupError) as err:
        alions.ali_ons_dir(root)
    assert "fake registry says no" in str(err.value) and f"{fake_npm} install" in str(err.value)
    assert [p.name for p in root.iterdir()] == [f"ali-ons-{alions.ALI_ONS_VERSION}.lock"], "leftovers after a failure"
