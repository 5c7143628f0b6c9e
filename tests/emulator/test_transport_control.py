"""The ZeroMQ transport's control plane with real sockets on loopback: ready, commands, acks,
signatures, a node gone, and a node noticing its launcher is gone.

Each test makes its own control server and transports and closes them; waits poll for a condition
with a generous deadline.
"""

from __future__ import annotations

import time

import pytest

from rmqemu.emulator.transport.base import ControlCommand, ControlLost
from rmqemu.emulator.transport.control import ControlServer, NodeGone, NodeReady
from rmqemu.emulator.transport.zmq_node import ZmqTransport
from rmqemu.errors import ControlError
from tests.emulator.test_transport import DEADLINE_S


def test_control_plane_ready_commands_acks_signatures_and_gone() -> None:
    server = ControlServer("secret")
    node = ZmqTransport("broker-a-0", control_endpoint=server.endpoint, control_key=server.enroll("broker-a-0"))
    server.enroll("intruder")
    intruder = ZmqTransport("intruder", control_endpoint=server.endpoint, control_key=b"w" * 32)
    try:
        node.ready({"addr": node.address, "pid": 1})
        intruder.ready({"addr": intruder.address, "pid": 2})
        deadline, ready = time.monotonic() + DEADLINE_S, []
        while not ready or not server.refused:
            assert time.monotonic() < deadline, f"ready={ready} refused={server.refused}"
            ready += [m for m in server.poll(20) if isinstance(m, NodeReady)]
            node.poll(0), intruder.poll(0)
        assert ready == [NodeReady("broker-a-0", {"addr": node.address, "pid": 1})]  # the intruder's is not
        cmd_id = server.command("broker-a-0", "state", {"x": 1})
        deadline, cmds = time.monotonic() + DEADLINE_S, []
        while not cmds:
            assert time.monotonic() < deadline
            cmds = [e for e in node.poll(20) if isinstance(e, ControlCommand)]
        assert cmds == [ControlCommand(cmd_id, "state", {"x": 1})]
        node.ack(cmd_id, True, {"ok": 1})
        with pytest.raises(ControlError, match="not connected"):
            server.command("nobody", "state", {})
        node.close()
        deadline, gone = time.monotonic() + DEADLINE_S, []
        while not gone:
            assert time.monotonic() < deadline
            gone = [m for m in server.poll(20) if isinstance(m, NodeGone)]
        assert gone == [NodeGone("broker-a-0")]
    finally:
        intruder.close()
        server.close()


def test_a_node_notices_its_launcher_is_gone() -> None:
    server = ControlServer("secret")
    node = ZmqTransport("broker-a-0", control_endpoint=server.endpoint, control_key=server.enroll("broker-a-0"))
    try:
        node.ready({"addr": node.address})
        deadline = time.monotonic() + DEADLINE_S
        while not [m for m in server.poll(20) if isinstance(m, NodeReady)]:
            assert time.monotonic() < deadline
            node.poll(0)
        server.close()
        deadline, lost = time.monotonic() + DEADLINE_S, []
        while not lost:
            assert time.monotonic() < deadline, "the node never noticed"
            lost = [e for e in node.poll(50) if isinstance(e, ControlLost)]
        assert "control connection down" in lost[0].reason
    finally:
        node.close()


NODE_OF_A_DYING_LAUNCHER = """
import json, sys
from rmqemu.emulator.transport.base import ControlLost
from rmqemu.emulator.transport.zmq_node import ZmqTransport
node = ZmqTransport("broker-a-0", control_endpoint=sys.argv[1], control_key=bytes.fromhex(sys.argv[2]))
node.poll(0)  # the first look at the parent
idle_wait = node._next_due(0.0)  # then nothing but the launcher to watch: no reason to wake
print("started", flush=True)  # the test's launcher stand-in exits when it reads this
sys.stdin.read()
polls, lost = 0, []
while not lost and polls < 1000:
    polls += 1
    lost = [e.reason for e in node.poll(60_000) if isinstance(e, ControlLost)]
node.close()
with open(sys.argv[3], "w") as f:
    json.dump({"idle_wait": idle_wait, "polls": polls, "lost": lost}, f)
"""


LAUNCHER_STAND_IN = """
import subprocess, sys
node = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE)
node.stdout.readline()
print(node.pid, flush=True)
"""  # exits with the node's stdin still open (inherited by nobody): the node reads EOF at our exit


def test_a_node_whose_launcher_exits_is_woken_by_it_not_by_polling(tmp_path) -> None:
    """The parent's exit wakes the node's wait (a pidfd in its poller): an idle node does not
    wake every 200 ms to look at its parent pid."""
    import json
    import subprocess
    import sys

    import psutil

    server = ControlServer("secret")
    result = tmp_path / "result.json"
    node_pid = None
    try:
        stand_in = subprocess.run(
            [sys.executable, "-c", LAUNCHER_STAND_IN, NODE_OF_A_DYING_LAUNCHER, server.endpoint,
             server.enroll("broker-a-0").hex(), str(result)], capture_output=True, text=True, timeout=DEADLINE_S)
        node_pid = int(stand_in.stdout.split()[0])
        deadline = time.monotonic() + DEADLINE_S
        while not result.exists() or not result.read_text().endswith("}"):
            assert time.monotonic() < deadline, "the orphaned node never noticed"
            time.sleep(0.05)
        got = json.loads(result.read_text())
        assert got["lost"] == ["the launcher process exited"]
        assert got["idle_wait"] is None or got["idle_wait"] == float("inf")
        assert got["polls"] <= 3  # handshake events may end a wait or two; then the exit itself
    finally:
        server.close()
        if node_pid is not None and psutil.pid_exists(node_pid):
            try:
                psutil.Process(node_pid).kill()
            except psutil.Error:
                pass
