"""Partition and link faults on a real client (issue 26 point 4): this test process speaks
RocketMQ's remoting protocol to a namesrv's remoting port, so the cluster knows it as
``client@<its pid>``; a partition naming it silences its namesrv, a heal brings the answers back,
and a link delay shows as a late answer. Through the Python API and through the CLI against
``rmqemu up``; every process is gone at the end, whatever failed."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import pytest

from rmqemu import emulator
from rmqemu.emulator.protocol import remoting
from rmqemu.emulator.protocol.frame import Frame
from rmqemu.emulator.testing import read_events
from tests.faults.live import alive, kill_survivors, manifest_procs, run_cli, wait_until

pytestmark = pytest.mark.integration

GET_ROUTEINFO_BY_TOPIC = 105
ME = f"client@{os.getpid()}"
SILENCE_S = 1.0  # a cut client gets no answer in this long (an answer takes a few ms)
DELAY_MS = 800  # cluster ms = wall ms at scale 1.0
TOPOLOGY: dict[str, Any] = {
    "name": "faults-real-clients", "seed": 3, "timing": {"scale": 1.0},  # no idle close during the test
    "namesrvs": 1, "brokers": [{"name": "broker-a"}], "remoting": True, "duration": "100000s",
}
TOPO_YAML = """
name: faults-real-clients-up
timing: {scale: 1.0}
namesrvs: 1
brokers:
  - {name: broker-a}
remoting: true
duration: 100000s
"""


class RawClient:
    """A real client as RocketMQ frames it: GET_ROUTEINFO_BY_TOPIC requests on one connection."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.decoder = remoting.StreamDecoder()
        self.opaque = 0

    def ask(self) -> int:
        self.opaque += 1
        self.sock.sendall(remoting.encode(Frame(GET_ROUTEINFO_BY_TOPIC, opaque=self.opaque,
                                                fields={"topic": "NoSuchTopic"})))
        return self.opaque

    def answer_s(self, timeout_s: float, idle: Callable[[], None] = lambda: None) -> float | None:
        """Ask once; seconds until the answer came, None if none within ``timeout_s``. Any other
        answer (to a request a fault dropped) fails the test."""
        opaque, start = self.ask(), time.monotonic()
        self.sock.settimeout(0.05)
        while time.monotonic() - start < timeout_s:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                idle()
                continue
            if not chunk:
                raise ConnectionError("the namesrv closed the connection")
            for frame in self.decoder.feed(chunk):
                assert frame.is_response and frame.opaque == opaque, (frame, opaque)
                return time.monotonic() - start
        return None

    def close(self) -> None:
        self.sock.close()


def fault_line(run: Path, kind: str, fault_id: str) -> dict[str, Any]:
    found = read_events(run, kind, where=lambda e: e.get("fault_id") == fault_id)
    assert len(found) == 1, (kind, fault_id, found)
    return found[0]


def test_partition_and_link_on_a_real_client_through_the_python_api(tmp_path: Path) -> None:
    run = tmp_path / "run"
    client: RawClient | None = None
    try:
        with emulator.Cluster(TOPOLOGY, run_dir=run) as c:
            pump = lambda: c.sleep(0.01)  # noqa: E731 - the control plane keeps moving while we wait
            client = RawClient(c.launcher.remoting_addrs["namesrv-0"])
            assert client.answer_s(10, pump) is not None
            assert ME in c.real_clients()

            cut = c.partition(ME, from_="namesrv-0")
            assert cut.targets == ["namesrv-0", ME] and cut.kind == "partition"
            assert sorted(map(tuple, cut.params["links"])) == [(ME, "namesrv-0"), ("namesrv-0", ME)]
            assert [f["targets"] for f in c.faults()] == [["namesrv-0", ME]]
            assert client.answer_s(SILENCE_S, pump) is None
            c.heal(cut)
            assert client.answer_s(10, pump) is not None

            # one-way from namesrv-0 to the client: it still gets the requests, its answers are lost
            with c.partition("namesrv-0", from_=ME, oneway=True) as answers_lost:
                assert answers_lost.params["links"] == [["namesrv-0", ME]]
                assert client.answer_s(SILENCE_S, pump) is None
            assert client.answer_s(10, pump) is not None

            with c.link(ME, delay=f"{DELAY_MS}ms") as slow:  # both ways: its requests held on arrival too
                assert ["namesrv-0", ME] in slow.params["links"] and [ME, "namesrv-0"] in slow.params["links"]
                took = client.answer_s(10, pump)
                assert took is not None and took >= 2 * DELAY_MS / 1000 * 0.9, took
            took = client.answer_s(10, pump)
            assert took is not None and took < DELAY_MS / 1000 / 2, took

            with pytest.raises(Exception, match="real client client@999999999 not connected to any namesrv, "
                                                f"broker or proxy; connected real clients: {ME}"):
                c.partition("client@999999999", from_="namesrv-0")
            with pytest.raises(Exception, match=f"kill: {ME} is a real client, not a process rmqemu runs"):
                c.kill(ME)
        for fault in (cut, answers_lost, slow):  # named in faults.jsonl as nodes are
            assert ME in fault_line(run, "fault.start", fault.fault_id)["targets"]
            assert ME in fault_line(run, "fault.end", fault.fault_id)["targets"]
    finally:
        if client is not None:
            client.close()
        if (run / "manifest.json").exists():
            kill_survivors(manifest_procs(run))


def supervisor_proc(run: Path) -> list[tuple[int, float]]:
    try:
        pid = int(json.loads((run / "supervisor.json").read_text())["pid"])
        return [(pid, psutil.Process(pid).create_time())]
    except (FileNotFoundError, psutil.NoSuchProcess):
        return []


def test_partition_a_real_client_with_the_cli_against_up(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TOPO_YAML)
    procs: list[tuple[int, float]] = []
    run: Path | None = None
    client: RawClient | None = None

    def cli(*args: str, code: int = 0) -> str:
        out = run_cli(*args, "--run", str(run), cwd=tmp_path)
        assert out.returncode == code, (args, out.stdout, out.stderr)
        return out.stdout if code == 0 else out.stderr

    try:
        up = run_cli("up", "t.yaml", "--root", "runs", cwd=tmp_path)
        run = (tmp_path / "runs" / "latest").resolve()
        procs = supervisor_proc(run)
        assert up.returncode == 0, up.stderr
        procs += manifest_procs(run)
        nodes = json.loads((run / "manifest.json").read_text())["nodes"]
        client = RawClient(nodes["namesrv-0"]["remoting_addr"])
        assert client.answer_s(10) is not None
        assert f"clients: {ME}" in cli("status")

        out = cli("partition", ME, "--from", "namesrv-0")
        assert out == (f"i1: partition namesrv-0,{ME} (groups; 2 link(s) blocked: "
                       f"{ME}->namesrv-0, namesrv-0->{ME})\n")
        assert cli("faults").startswith(f"i1: partition namesrv-0,{ME}")
        assert client.answer_s(SILENCE_S) is None
        assert cli("heal") == "healed: i1\n"
        assert client.answer_s(10) is not None

        out = cli("link", ME, "--to", "namesrv-0", "--delay", f"{DELAY_MS}ms", "--oneway")  # its requests only
        assert out == f"i2: link {ME} (delay_ms={DELAY_MS} on 1 link(s))\n"
        took = client.answer_s(10)
        assert took is not None and took >= DELAY_MS / 1000 * 0.9, took
        cli("heal", "i2")

        err = cli("partition", "client@999999999", "--from", "namesrv-0", code=2)
        assert err == ("error: partition: real client client@999999999 not connected to any namesrv, broker or proxy; "
                       f"connected real clients: {ME} (rmqemu status lists them)\n")
        err = cli("pause", ME, code=2)
        assert err == (f"error: pause: {ME} is a real client, not a process rmqemu runs; "
                       "only partition and link apply to it\n")
        assert cli("faults") == "no active fault\n"
        for fault_id, reason in (("i1", "heal_all"), ("i2", "interactive")):
            assert fault_line(run, "fault.start", fault_id)["targets"][-1] == ME
            assert fault_line(run, "fault.end", fault_id)["reason"] == reason

        client.close()
        client = None
        cli("down")
        wait_until(lambda: not any(alive(*p) for p in procs), 60, "every process of the run to exit")
    finally:
        if client is not None:
            client.close()
        if run is not None and (run / "manifest.json").exists():
            procs += manifest_procs(run)
        kill_survivors(procs)
