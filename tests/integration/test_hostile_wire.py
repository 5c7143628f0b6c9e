"""Hostile input on the wire (issue 13): frames any local user can send to a node, to the
launcher's control endpoint and to an ``rmqemu up`` supervisor must not crash, hang or hijack
anything. Each test sends what used to do harm, then finds every process alive, the control
plane obeying the launcher only, and the cluster still routing (a send ``ok`` afterwards).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import zmq

from rmqemu.emulator.chaos import Cluster
from rmqemu.emulator.testing import read_events
from rmqemu.emulator.transport import _auth
from rmqemu.emulator.transport.control import pack
from tests.integration.hostile_lib import HOSTILE, collide_routing_ids, deliver, fuzz_frames

TOPO: dict[str, Any] = {
    "name": "hostile",
    "timing": {"scale": 0.01},
    "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 1}, {"name": "broker-b"}],
    "topics": [{"name": "OrderTopic", "brokers": ["broker-a", "broker-b"], "queues": 2}],
    "producers": [{"group": "pg-1", "topics": ["OrderTopic"], "rate": 5, "size": 64, "mode": "sync"}],
    "consumers": [{"group": "cg-1", "instances": 1, "subscribe": ["OrderTopic"]}],
    "duration": "600s",
}
ROLES = {"namesrv-0", "broker-a-0", "broker-a-1", "broker-b-0", "pg-1-0", "cg-1-0"}  # every role


def now_ms() -> float:
    return time.time() * 1000


def assert_all_alive_and_routing(c: Cluster, since_ms: float) -> None:
    """No node died, each answers the launcher, and the producer gets a send ok after ``since_ms``."""
    c.launcher.check()
    assert all(p.alive() for p in c.launcher.procs.values()), {n: p.exit_info() for n, p in c.launcher.procs.items()}
    for name in c.launcher.procs:
        assert "_runtime" in c.state(name)
    c.wait_for(lambda: read_events(c.run_dir, "send", node="pg-1-0",
                                   where=lambda e: e["outcome"] == "ok" and e["ts"] > since_ms),
               60, "a send ok after the hostile input")
    c.launcher.check()


def launcher_refusals(c: Cluster) -> list[dict[str, Any]]:
    return read_events(c.run_dir, "control.refused", node="launcher")


def test_the_frames_that_killed_processes_are_logged_and_dropped(start_cluster) -> None:
    c = start_cluster(TOPO)
    assert set(c.launcher.procs) == ROLES
    for addr in c.addrs.values():
        deliver(addr, HOSTILE)
    deliver(c.launcher.control.endpoint, HOSTILE)
    sent = now_ms()
    for name in ROLES:
        c.wait_for(lambda name=name: read_events(c.run_dir, "wire.bad_frame", node=name,
                                                 where=lambda e: e["peer"] == "mallory"), 30,
                   f"{name} to log the bad frame")
    c.wait_for(lambda: c.launcher.control.refused >= 2, 30, "the launcher to refuse both frames")
    refused = launcher_refusals(c)
    assert refused and refused[0]["reason"].startswith("expected [node, payload, signature]")
    assert_all_alive_and_routing(c, sent)


def test_predicted_routing_ids_cannot_abort_a_node(start_cluster) -> None:
    """libzmq 4.3 aborts a process whose ROUTER auto-numbers a new peer with an id another peer
    already claimed; unseeded, those numbers are the same in every process."""
    c = start_cluster(TOPO)
    for addr in c.addrs.values():
        collide_routing_ids(addr)
    sent = now_ms()
    for name in ROLES:
        c.wait_for(lambda name=name: c.state(name)["_runtime"]["transport"]["bad_frames"] >= 16, 30,
                   f"{name} to have read every frame")
    assert_all_alive_and_routing(c, sent)


def test_an_impostor_cannot_take_over_replay_or_repoint_a_node(start_cluster) -> None:
    c = start_cluster(TOPO)
    addr_before = c.addrs["broker-a-0"]
    captured: list[list[bytes]] = []  # what the launcher sends, as a sniffer would have it
    real_send = c.launcher.control.sock.send_multipart
    def sniff(parts: list[bytes], *a: Any, **k: Any) -> Any:
        captured.append(list(parts))
        return real_send(parts, *a, **k)
    c.launcher.control.sock.send_multipart = sniff  # type: ignore[method-assign]
    key = c.launcher.control._keys["broker-a-0"]
    ctx = zmq.Context()
    impostor = ctx.socket(zmq.DEALER)
    impostor.setsockopt(zmq.LINGER, 0)
    impostor.setsockopt(zmq.IDENTITY, b"broker-a-0")  # ROUTER_HANDOVER used to hand it the node's route
    try:
        impostor.connect(c.launcher.control.endpoint)
        old_style = pack({"t": "ready", "token": c.launcher.token, "info": {"addr": "127.0.0.1:1", "pid": 1}})
        impostor.send(old_style)
        c.wait_for(lambda: c.launcher.control.refused >= 1, 30, "the old-style ready refused")
        # a captured ready (seq 1, correctly signed) replayed from another connection (another
        # peer, so its refusal is not held back by the rate limit)
        ready = pack({"t": "ready", "info": {"addr": "127.0.0.1:1", "pid": 1}, "seq": 1})
        tag = _auth.tag(key, _auth.FROM_NODE + b"broker-a-0", ready)
        deliver(c.launcher.control.endpoint, [[b"broker-a-0", ready, tag]], identity=None)
        c.wait_for(lambda: c.launcher.control.refused >= 2, 30, "the replayed ready refused")
        reasons = [e["reason"] for e in launcher_refusals(c)]
        assert any("replayed" in r for r in reasons), reasons
        # the launcher still commands the real node: heal and link reach it, nothing reaches the impostor
        c.launcher.set_links({})
        assert c.state("broker-a-0")["_runtime"]["stopping"] is False
        assert c.addrs["broker-a-0"] == addr_before
        assert impostor.poll(100) == 0
        # a captured command replayed to the node is refused there, never obeyed twice
        cmd = next(p for p in captured if p[0] == c.launcher.control._route["broker-a-0"])
        real_send(cmd)
        c.wait_for(lambda: read_events(c.run_dir, "control.refused", node="broker-a-0",
                                       where=lambda e: "replayed" in e["reason"]), 30, "the node to refuse the replay")
        # a legitimate restart (kill --restart-after) reconnects under its name, impostor or not
        c.launcher.signal("broker-a-0", signal.SIGKILL)
        c.launcher.node_exited("broker-a-0", signal.SIGKILL)
        impostor.send_multipart([b"broker-a-0", ready, _auth.tag(key, _auth.FROM_NODE + b"broker-a-0", ready)])
        c.launcher.restart("broker-a-0")
        assert c.state("broker-a-0")["_runtime"]["stopping"] is False
        assert c.addrs["broker-a-0"] == addr_before  # a restarted node binds its old port
        later = pack({"t": "ready", "info": {"addr": "127.0.0.1:1", "pid": 1}, "seq": 10 ** 6})
        refused = c.launcher.control.refused
        impostor.send_multipart([b"broker-a-0", later, _auth.tag(key, _auth.FROM_NODE + b"broker-a-0", later)])
        c.wait_for(lambda: c.launcher.control.refused > refused, 30, "a message under the previous life's key refused")
        assert c.addrs["broker-a-0"] == addr_before
    finally:
        impostor.close()
        ctx.term()
    assert_all_alive_and_routing(c, now_ms())


def test_seeded_fuzz_of_every_role_and_the_control_endpoint(start_cluster) -> None:
    c = start_cluster(TOPO)
    for i, name in enumerate(sorted(ROLES)):
        deliver(c.addrs[name], list(fuzz_frames(seed=1300 + i, count=150)), identity=b"fuzz")
    deliver(c.launcher.control.endpoint, list(fuzz_frames(seed=1399, count=150)), identity=None)
    sent = now_ms()
    c.wait_for(lambda: c.launcher.control.refused >= 150, 60, "the launcher to refuse every fuzz frame")
    for name in ROLES:
        c.wait_for(lambda name=name: c.state(name)["_runtime"]["transport"]["bad_frames"] > 0, 30,
                   f"{name} to count bad frames")
        lines = read_events(c.run_dir, "wire.bad_frame", node=name, where=lambda e: e["peer"] == "fuzz")
        assert len(lines) < 100, f"{name}: the bad-frame events are not rate-limited"
    assert len(launcher_refusals(c)) < 100
    assert_all_alive_and_routing(c, sent)


def test_the_supervisor_rpc_survives_hostile_frames_and_refuses_replays(tmp_path: Path) -> None:
    import psutil

    from rmqemu.emulator.cli.supervisor import call, start_detached
    from rmqemu.emulator.testing import kill_survivors, process_alive, run_processes

    topo = tmp_path / "t.yaml"
    topo.write_text(json.dumps({**TOPO, "consumers": [], "duration": "100000s"}))
    run = tmp_path / "run"
    procs: list[tuple[int, float]] = []
    try:
        state = start_detached(topo, run)
        procs.append((state["pid"], psutil.Process(state["pid"]).create_time()))
        procs += run_processes(run)
        deliver(state["endpoint"], HOSTILE + list(fuzz_frames(seed=1313, count=150)))
        old_style = [pack({"token": state["token"], "name": "down", "args": {}})]  # a token in clear is no key
        deliver(state["endpoint"], [old_style])
        assert call(run, "status")["died"] == []
        assert all(process_alive(*p) for p in procs)
        # a captured, correctly signed request replays as a refusal
        payload = pack({"name": "status", "args": {}, "nonce": "n-1313", "ts": now_ms()})
        request = [payload, _auth.tag(_auth.supervisor_key(state["token"]), _auth.RPC_REQUEST, payload)]
        replies = []
        for _ in range(2):
            ctx = zmq.Context()
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            try:
                sock.connect(state["endpoint"])
                sock.send_multipart(request)
                assert sock.poll(30_000), "no reply"
                replies.append(json.loads(sock.recv_multipart()[0]))
            finally:
                sock.close()
                ctx.term()
        assert replies[0]["ok"] is True and replies[1]["ok"] is False
        assert "replayed" in replies[1]["result"]["error"]
        log = (run / "supervisor.log").read_text()
        assert '"kind": "control.refused"' in log
        assert log.count('"kind": "control.refused"') < 100  # rate-limited
        assert call(run, "status")["died"] == []
        call(run, "down")
        deadline = time.monotonic() + 60
        while any(process_alive(*p) for p in procs):
            assert time.monotonic() < deadline, "down left processes behind"
            time.sleep(0.05)
    finally:
        kill_survivors(procs)
