"""Remoting ports end to end (`remoting:` on): a raw TCP client speaks RocketMQ's own protocol to
a namesrv of a cluster started by `rmqemu up` and by `emulator.Cluster`, gets routes holding the
brokers' remoting addresses, shows up in `rmqemu status`, and finds a restarted node on its old
port. Every process is gone at the end, whatever failed."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import psutil
import pytest

from rmqemu.emulator.protocol import remoting
from rmqemu.emulator.protocol.frame import Frame
from rmqemu.emulator.testing import read_events
from tests.faults.live import alive, kill_survivors, manifest_procs, run_cli, wait_until

pytestmark = pytest.mark.integration

GET_ROUTEINFO_BY_TOPIC = 105
TOPO = """
name: remoting-up
timing: {scale: 0.1}
namesrvs: 1
brokers:
  - {name: broker-a, slaves: 1, autoCreateTopicEnable: true}
  - {name: broker-b, autoCreateTopicEnable: true}
topics:
  - {name: RealTopic, brokers: [broker-a, broker-b], queues: 4}
remoting: true
duration: 100000s
"""
BROKERS = {"broker-a": {"0": "broker-a-0", "1": "broker-a-1"}, "broker-b": {"0": "broker-b-0"}}


def connect(addr: str) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def ask_route(sock: socket.socket, topic: str, opaque: int = 1) -> tuple[int, Any]:
    """GET_ROUTEINFO_BY_TOPIC as a real client sends it: the answer's code and JSON body."""
    sock.sendall(remoting.encode(Frame(GET_ROUTEINFO_BY_TOPIC, opaque=opaque, fields={"topic": topic})))
    decoder, frames = remoting.StreamDecoder(), []
    while not frames:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the namesrv closed the connection")
        frames = decoder.feed(chunk)
    assert frames[0].opaque == opaque and frames[0].is_response
    return frames[0].code, frames[0].json_body()


def route_addrs(namesrv: str, topic: str) -> dict[str, dict[str, str]] | None:
    """brokerName -> brokerAddrs of the namesrv's route to ``topic`` (a fresh connection), or None."""
    with connect(namesrv) as sock:
        code, body = ask_route(sock, topic)
    if code != 0:
        return None
    return {bd["brokerName"]: bd["brokerAddrs"] for bd in body["brokerDatas"]}


def expected_route(nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {b: {i: nodes[n]["remoting_addr"] for i, n in ids.items()} for b, ids in BROKERS.items()}


def supervisor_proc(run: Path) -> tuple[int, float]:
    pid = int(json.loads((run / "supervisor.json").read_text())["pid"])
    try:
        return pid, psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return pid, 0.0  # gone already: nothing to clean up


def test_up_prints_namesrv_addr_routes_carry_remoting_addrs_and_a_restart_keeps_its_port(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TOPO)
    procs: list[tuple[int, float]] = []
    run: Path | None = None
    try:
        out = run_cli("up", "t.yaml", "--root", "runs", cwd=tmp_path)
        run = (tmp_path / "runs" / "latest").resolve()
        procs = [supervisor_proc(run)] if (run / "supervisor.json").exists() else []
        assert out.returncode == 0, out.stderr
        procs += manifest_procs(run)
        assert "warning: remoting: at timing.scale 0.1" in out.stderr  # 12 wall s of idle close < 30 s
        nodes = json.loads((run / "manifest.json").read_text())["nodes"]
        namesrv = nodes["namesrv-0"]["remoting_addr"]
        assert out.stdout.splitlines() == [f"remoting-up is up: {run}", f"namesrvAddr={namesrv}"]
        remoting_nodes = {n for n, e in nodes.items() if "remoting_addr" in e}
        assert remoting_nodes == {"namesrv-0", "broker-a-0", "broker-a-1", "broker-b-0"}
        assert len({e["remoting_addr"] for e in nodes.values() if "remoting_addr" in e}) == 4
        assert all(e["remoting_addr"] != e["addr"] for e in nodes.values() if "remoting_addr" in e)

        # a route to a real client names the brokers' remoting ports, not their ZeroMQ addresses
        want = expected_route(nodes)
        wait_until(lambda: route_addrs(namesrv, "RealTopic") == want, 60, "RealTopic routed on both brokers")

        # a client holding its connection open is listed by `status`, under its process id
        with connect(namesrv) as sock:
            assert ask_route(sock, "NoSuchTopic")[0] == 17  # TOPIC_NOT_EXIST
            status = run_cli("status", "--run", str(run), cwd=tmp_path)
            assert status.returncode == 0, status.stderr
            lines = status.stdout.splitlines()
            assert lines[:2] == [str(run), f"namesrvAddr={namesrv}"]
            ns_line = next(line for line in lines if line.strip().startswith("namesrv-0 "))
            assert f"remoting {namesrv}  clients: client@{os.getpid()}" in ns_line
            broker_line = next(line for line in lines if line.strip().startswith("broker-b-0 "))
            assert broker_line.endswith(f"remoting {nodes['broker-b-0']['remoting_addr']}")  # no client there

        # killed and restarted: the same remoting port, and the route points there again
        old = nodes["broker-a-0"]
        kill = run_cli("kill", "broker-a-0", "--restart-after", "5s", "--run", str(run), cwd=tmp_path)
        assert kill.returncode == 0, kill.stderr

        def restarted() -> dict[str, Any] | None:
            entry = json.loads((run / "manifest.json").read_text())["nodes"]["broker-a-0"]
            return entry if entry["pid"] != old["pid"] and alive(entry["pid"], entry["create_time"]) else None

        wait_until(restarted, 60, "broker-a-0 restarted")
        procs += manifest_procs(run)
        assert restarted()["remoting_addr"] == old["remoting_addr"]  # type: ignore[index]
        starts = read_events(run, "node.start", node="broker-a-0")
        assert [e["remoting_addr"] for e in starts] == [old["remoting_addr"]] * 2
        connect(old["remoting_addr"]).close()  # listening again
        wait_until(lambda: route_addrs(namesrv, "RealTopic") == want, 60, "RealTopic routed again after the restart")

        down = run_cli("down", "--run", str(run), cwd=tmp_path)
        assert down.returncode == 0, down.stderr
        wait_until(lambda: not any(alive(*p) for p in procs), 60, "every process of the run to exit")
    finally:
        if run is not None and (run / "manifest.json").exists():
            procs += manifest_procs(run)
        kill_survivors(procs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_python_api_gives_namesrv_addr_and_fixed_ports_survive_a_namesrv_restart(start_cluster) -> None:
    port = free_port()
    c = start_cluster({"name": "remoting-api", "timing": {"scale": 0.1}, "namesrvs": 2,
                       "brokers": [{"name": "broker-a"}], "duration": "100000s",
                       "remoting": {"host": "127.0.0.1", "ports": {"namesrv-1": port}}})
    addrs = c.launcher.remoting_addrs
    assert set(addrs) == {"namesrv-0", "namesrv-1", "broker-a-0"} and addrs["namesrv-1"] == f"127.0.0.1:{port}"
    assert c.namesrv_addr == f"{addrs['namesrv-0']};127.0.0.1:{port}"
    before = c.namesrv_addr
    for ns in c.namesrv_addr.split(";"):
        c.wait_for(lambda ns=ns: route_addrs(ns, "TBW102") == {"broker-a": {"0": addrs["broker-a-0"]}}, 60,
                   f"TBW102 routed to broker-a's remoting port on {ns}")

    pid = c.pid("namesrv-1")
    c.kill("namesrv-1", restart_after="5s")
    c.wait_for(lambda: c.pid("namesrv-1") != pid and c.launcher.procs["namesrv-1"].alive(), 60, "namesrv-1 restarted")
    assert c.namesrv_addr == before
    c.wait_for(lambda: route_addrs(f"127.0.0.1:{port}", "TBW102") == {"broker-a": {"0": addrs["broker-a-0"]}}, 60,
               "broker-a registered again on the restarted namesrv-1")
    manifest = json.loads((c.run_dir / "manifest.json").read_text())
    assert manifest["nodes"]["namesrv-1"]["remoting_addr"] == f"127.0.0.1:{port}"
