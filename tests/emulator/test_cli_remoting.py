"""What `rmqemu up`, `rmqemu status` and `emulator.Cluster` say about the remoting ports (real
clients), with the supervisor stood in for: no process is started."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rmqemu.emulator.chaos import Cluster
from rmqemu.emulator.cli import supervisor, updown
from rmqemu.emulator.cli.main import main

TOPO = "name: rc\ntiming: {scale: %s}\nnamesrvs: 2\nbrokers: [{name: broker-a}]\n%s"


def fake_up(monkeypatch: pytest.MonkeyPatch, remoting: bool) -> list[Path]:
    """`start_detached` that writes the manifest a cluster would (addresses per node) and returns."""
    started: list[Path] = []

    def start_detached(topo_path: Path, run_dir: Path, timeout_s: float = 60.0) -> dict[str, Any]:
        nodes: dict[str, dict[str, Any]] = {}
        for i, (name, role) in enumerate([("namesrv-0", "namesrv"), ("namesrv-1", "namesrv"),
                                          ("broker-a-0", "broker")]):
            nodes[name] = {"role": role, "addr": f"127.0.0.1:{5000 + i}"}
            if remoting:
                nodes[name]["remoting_addr"] = f"127.0.0.1:{9876 + i}"
        (run_dir / "manifest.json").write_text(json.dumps({"nodes": nodes}))
        started.append(run_dir)
        return {"state": "up"}

    monkeypatch.setattr(supervisor, "start_detached", start_detached)
    return started


def test_up_prints_the_namesrv_addr_line_and_warns_of_a_fast_scale(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    started = fake_up(monkeypatch, remoting=True)
    (tmp_path / "t.yaml").write_text(TOPO % (0.1, "remoting: true\n"))
    result = CliRunner().invoke(main, ["up", str(tmp_path / "t.yaml"), "--root", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"rc is up: {started[0]}\nnamesrvAddr=127.0.0.1:9876;127.0.0.1:9877\n"
    assert result.stderr.startswith("warning: remoting: at timing.scale 0.1 a node closes a connection idle for "
                                    "120 s x 0.1 = 12 wall s, but real clients")
    assert len(result.stderr.splitlines()) == 1


def test_up_without_remoting_prints_what_it_always_did(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = fake_up(monkeypatch, remoting=False)
    (tmp_path / "t.yaml").write_text(TOPO % (0.01, ""))
    result = CliRunner().invoke(main, ["up", str(tmp_path / "t.yaml"), "--root", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert (result.stdout, result.stderr) == (f"rc is up: {started[0]}\n", "")


def test_launch_warns_and_still_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rmqemu.emulator.cli import launch as launch_module

    ran: list[float] = []

    def run_topology(topo: Any, **_kw: Any) -> launch_module.RunResult:
        ran.append(topo.timing.scale)
        return launch_module.RunResult(tmp_path / "run")

    monkeypatch.setattr(launch_module, "run_topology", run_topology)
    (tmp_path / "t.yaml").write_text(TOPO % (0.01, "remoting: {host: 0.0.0.0}\n"))
    result = CliRunner().invoke(main, ["launch", str(tmp_path / "t.yaml"), "--root", str(tmp_path / "runs")])
    assert result.exit_code == 0 and ran == [0.01], result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "launching rc (seed 42, scale 0.01)"
    assert lines[1].startswith("warning: remoting: at timing.scale 0.01 a node closes a connection idle for 120 s")
    assert lines[2].startswith("warning: remoting.host 0.0.0.0 is not a loopback address")


STATUS = {
    "run": "/runs/rc-1",
    "nodes": {
        "namesrv-0": {"role": "namesrv", "addr": "127.0.0.1:5000", "pid": 11, "alive": True},
        "broker-a-0": {"role": "broker", "addr": "127.0.0.1:5001", "pid": 12, "alive": False, "signal": 9},
    },
    "died": [],
}


def status_lines(monkeypatch: pytest.MonkeyPatch, res: dict[str, Any]) -> list[str]:
    monkeypatch.setattr(updown, "read_state", lambda path: {"state": "up"})
    monkeypatch.setattr(updown, "call", lambda path, name: res)
    monkeypatch.setattr(updown, "resolve_run", lambda run, root: Path(res["run"]))
    out: list[str] = []
    updown.status(None, out.append)
    return out


def test_status_without_remoting_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    assert status_lines(monkeypatch, STATUS) == [
        "/runs/rc-1",
        "  namesrv-0        namesrv   up         pid 11  127.0.0.1:5000",
        "  broker-a-0       broker    exited 9   pid 12  127.0.0.1:5001",
    ]


def test_status_shows_the_namesrv_addr_and_each_nodes_real_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = {**STATUS["nodes"], "namesrv-1": {"role": "namesrv", "addr": "127.0.0.1:5002", "pid": 13, "alive": True}}
    for name, port in (("namesrv-0", 9876), ("broker-a-0", 10911), ("namesrv-1", 9877)):
        nodes[name] = {**nodes[name], "remoting_addr": f"127.0.0.1:{port}"}
    res = {**STATUS, "nodes": nodes, "namesrv_addr": "127.0.0.1:9876;127.0.0.1:9877",
           "remoting_clients": {"namesrv-0": ["client@4242", "client@4243"], "namesrv-1": None}}
    assert status_lines(monkeypatch, res) == [
        "/runs/rc-1",
        "namesrvAddr=127.0.0.1:9876;127.0.0.1:9877",
        "  namesrv-0        namesrv   up         pid 11  127.0.0.1:5000  remoting 127.0.0.1:9876  "
        "clients: client@4242, client@4243",
        "  broker-a-0       broker    exited 9   pid 12  127.0.0.1:5001  remoting 127.0.0.1:10911",
        "  namesrv-1        namesrv   up         pid 13  127.0.0.1:5002  remoting 127.0.0.1:9877  "
        "clients: ? (the node did not answer)",
    ]


def test_cluster_namesrv_addr_is_none_when_off_and_the_joined_line_when_on(tmp_path: Path) -> None:
    base = {"name": "rc", "namesrvs": 2, "brokers": [{"name": "broker-a"}]}
    off = Cluster(base, run_dir=tmp_path / "off")
    on = Cluster({**base, "remoting": True}, run_dir=tmp_path / "on")
    try:
        assert off.namesrv_addr is None and on.namesrv_addr is None  # not started: nothing bound yet
        on.launcher.remoting_addrs.update({"namesrv-1": "127.0.0.1:9877", "namesrv-0": "127.0.0.1:9876",
                                           "broker-a-0": "127.0.0.1:10911"})
        assert on.namesrv_addr == "127.0.0.1:9876;127.0.0.1:9877"
    finally:
        off.finish(drain=False)
        on.finish(drain=False)


def test_up_refuses_a_fixed_port_that_is_taken_before_anything_starts(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    started = fake_up(monkeypatch, remoting=True)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        (tmp_path / "t.yaml").write_text(TOPO % (1.0, f"remoting: {{ports: {{broker-a-0: {port}}}}}\n"))
        result = CliRunner().invoke(main, ["up", str(tmp_path / "t.yaml"), "--root", str(tmp_path / "runs")])
    assert result.exit_code == 2 and not started, result.output
    assert (f"remoting.ports.broker-a-0: 127.0.0.1:{port} cannot be listened on: Address already in use"
            in result.stderr)
    assert not (tmp_path / "runs").exists()
