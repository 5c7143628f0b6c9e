"""The copyable RocketMQ 5 example (docs/examples/rocketmq5/app.py) runs as docs/real-clients.md
says a user runs it: `rmqemu up topologies/rocketmq5.yaml`, the app with the official Python
client pointed at the printed `endpoints=`, broker-a's master killed mid-run and restarted. Nothing
the client saw acknowledged is lost; the proxies' send lines account for every failed send the
client gave up on; `rmqemu down` leaves no process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rmqemu.emulator.testing import kill_survivors, process_alive, run_processes
from tests.faults.live import run_cli, wait_until
from tests.realclients import py5client

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "docs" / "examples" / "rocketmq5" / "app.py"
COUNT = 150


def _proxy_sends(run: Path) -> int:
    return sum(f.read_text().count('"kind":"send"') for f in (run / "events").glob("proxy-*.jsonl"))


def test_rocketmq5_example_survives_a_master_kill(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    shutil.copy(APP, app)
    runs = tmp_path / "runs"
    up = run_cli("up", str(REPO / "topologies" / "rocketmq5.yaml"), "--root", str(runs), cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    run = Path(next(line.split(" is up: ")[1] for line in up.stdout.splitlines() if " is up: " in line))
    try:
        endpoints = next(line.removeprefix("endpoints=") for line in up.stdout.splitlines()
                         if line.startswith("endpoints="))
        assert len(endpoints.split(";")) == 2, up.stdout
        home = tmp_path / "home"
        home.mkdir()
        # INVISIBLE_S: the proxy's least, so an ack lost in the kill returns sooner. DEADLINE_S: the
        # app's default. The client's receives go round the 8 queues of both brokers, and each one
        # on a broker with nothing left waits the whole 5 s long poll, so a backlog on one broker
        # drains at 16 messages per such round; on a loaded host 30 s was seen to run out with 25
        # of 132 still on broker-b, none lost. The app ends as soon as it has every acked message.
        env = {**os.environ, "HOME": str(home), "ENDPOINTS": endpoints, "COUNT": str(COUNT), "INTERVAL_MS": "20",
               "DEADLINE_S": "60", "INVISIBLE_S": "10"}
        proc = subprocess.Popen([str(py5client.python()), str(app)], env=env, cwd=tmp_path, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            wait_until(lambda: _proxy_sends(run) >= 10, 60, "the app's first sends through the proxies")
            # a few sends in: the fault lands while the application runs
            kill = run_cli("kill", "broker-a-0", "--restart-after", "2s", "--run", str(run), cwd=tmp_path)
            assert kill.returncode == 0, kill.stderr
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)  # its own session: the app and nothing else
                proc.wait()
        out_lines = out.splitlines()
        summary = json.loads(out_lines[-1])
        assert proc.returncode == 0 and summary["lost"] == 0, (summary, err[-3000:])
        assert summary["sent"] == COUNT == summary["acked"] + summary["failed"], summary
        assert summary["received"] == summary["acked"], summary
        wait_until(lambda: "no active fault" in run_cli("faults", "--run", str(run), cwd=tmp_path).stdout, 30,
                   "broker-a-0 back")
    finally:
        down = run_cli("down", "--run", str(run), cwd=tmp_path)
        kill_survivors(run_processes(run))
    assert down.returncode == 0, down.stderr
    sends = [json.loads(line) for f in (run / "events").glob("proxy-*.jsonl") for line in f.open()
             if '"kind":"send"' in line]
    # every message reached a proxy; what the app saw acked the proxies saw stored; the ones no
    # attempt stored are among those the app gave up on (one may have been stored after the
    # client's deadline: then the proxy saw it ok and the app did not)
    ok_ids = {s["msg_id"] for s in sends if s["outcome"] == "ok"}
    acked = {json.loads(line)["id"] for line in out_lines if '"event": "sent"' in line}
    assert len({s["msg_id"] for s in sends}) == COUNT and acked <= ok_ids
    assert len({s["msg_id"] for s in sends} - ok_ids) <= summary["failed"], summary
    assert not any(process_alive(*p) for p in run_processes(run))
