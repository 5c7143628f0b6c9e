"""Process faults (pause, stop, kill + restart) on real processes, and signal safety.

Effects are read from the nodes' events: the producer's ``send`` outcomes, the namesrv's
``ns.broker`` changes, the broker's ``broker.topic`` on restart, ``node.exit`` / ``node.start``,
the consumer's ``consume``; and from a restarted broker's state (what its store brought back).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from typing import Any

import psutil
import pytest

from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.emulator.launcher.signals import SpawnedProcess
from rmqemu.emulator.node.clock import host_ms, mono_ms
from rmqemu.emulator.testing import read_events
from rmqemu.errors import ProcessGone, UnsafeSignal
from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan
from rmqemu.faults.kinds import KillFault, PauseFault
from rmqemu.faults.schedule import plan_from_specs
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.faults.live import SCALE, alive, fault_events, manifest_procs, ns_broker, sends
from tests.integration.seeds_lib import acked, consumed

BASE = {"name": "faults-process", "timing": {"scale": SCALE}, "namesrvs": 1, "duration": "100000s",
        "brokers": [{"name": "broker-a"}, {"name": "broker-b"}]}
WITH_PRODUCER = {**BASE, "brokers": [{"name": "broker-a"}],
                 "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 2}],
                 "producers": [{"group": "pg-1", "topics": ["T"], "rate": 0.5, "mode": "sync"}]}


def test_paused_broker_makes_sends_time_out_and_resume_brings_them_back(start_cluster) -> None:
    c = start_cluster(WITH_PRODUCER)
    c.wait_for(lambda: sends(c, "pg-1-0", "ok"), 60, "a first ok send")
    z1 = c.pause("broker-a-0")
    paused = fault_events(c, z1.fault_id)[0]["ts"]
    assert psutil.Process(c.launcher.procs["broker-a-0"].pid).status() == psutil.STATUS_STOPPED
    c.wait_for(lambda: sends(c, "pg-1-0", "timeout", after=paused), 60, "a send to the paused broker to time out")
    timeouts = sends(c, "pg-1-0", "timeout", after=paused)
    assert {e["broker"] for e in timeouts} == {"broker-a"}
    assert not sends(c, "pg-1-0", "ok", after=paused)  # a frozen broker answers nothing
    z1.heal()
    resumed = fault_events(c, z1.fault_id, "fault.end")[0]["ts"]
    c.wait_for(lambda: sends(c, "pg-1-0", "ok", after=resumed), 60, "ok sends after the resume")


def test_stop_makes_the_broker_unregister_and_restart_after_brings_it_back(start_cluster) -> None:
    # scale 0.1: the broker waits for the namesrv's answer to UNREGISTER_BROKER for 3000 ms
    # scaled before it exits; 30 ms (scale 0.01) is short on a loaded machine
    c = start_cluster({**BASE, "timing": {"scale": 0.1}})
    s1 = c.stop("broker-b-0")  # healing it restarts the node, as restart_after would
    stopped_at = fault_events(c, s1.fault_id)[0]["ts"]
    c.wait_for(lambda: ns_broker(c, "broker-b-0", "unregister"), 30, "UNREGISTER_BROKER on the namesrv")
    assert ns_broker(c, "broker-b-0", "unregister")[0]["ts"] <= stopped_at  # during the graceful stop
    assert not ns_broker(c, "broker-b-0", ("expired", "channel_destroy"))
    c.wait_for(lambda: read_events(c.run_dir, "node.exit", node="broker-b-0"), 30, "broker-b-0's node.exit")
    assert read_events(c.run_dir, "node.exit", node="broker-b-0")[0].get("code") == 0  # graceful
    s1.heal()
    restarted = fault_events(c, s1.fault_id, "fault.end")[0]
    assert restarted["restarted"] is True
    c.wait_for(lambda: ns_broker(c, "broker-b-0", "register", after=stopped_at), 30, "broker-b-0 registered again")
    assert not c.died


def test_scheduled_kill_with_restart_after_restores_topics_from_the_store(start_cluster) -> None:
    c = start_cluster({**BASE, "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 3}]})
    inj = Injector(c.launcher)  # the plan interpreter under test drives its own injector
    old_pid = c.launcher.procs["broker-a-0"].pid
    plan = plan_from_specs([FaultSpec.model_validate({"at": 0, "kill": "broker-a-0", "restart_after": "50s"})],
                           c.launcher.node_infos(), seed=1, scale=SCALE)
    run = run_plan(plan, inj, clock=mono_ms, sleep=c.launcher.pump)  # no duration: nothing to wait for after the steps
    assert run.done == ["start f1 (kill broker-a-0) at 0 ms", "stop f1 (kill broker-a-0) at 500 ms"]
    killed = fault_events(c, "f1")[0]["ts"]
    exits = read_events(c.run_dir, "node.exit", node="broker-a-0")
    assert exits[0]["signal"] == signal.SIGKILL and exits[0]["pid"] == old_pid and exits[0]["ts"] <= killed
    assert ns_broker(c, "broker-a-0", "channel_destroy")  # a dead process's channel closes at once

    def restore() -> list[dict[str, Any]]:
        return read_events(c.run_dir, "broker.topic", node="broker-a-0",
                           where=lambda e: e["how"] == "restore" and e["topic"] == "T" and e["ts"] > killed)

    c.wait_for(restore, 30, "topic T restored from topics.json")
    assert restore()[0]["write_queues"] == 3
    starts = read_events(c.run_dir, "node.start", node="broker-a-0")
    assert len(starts) == 2 and starts[1]["pid"] == c.launcher.procs["broker-a-0"].pid != old_pid
    assert (c.launcher.procs["broker-a-0"].pid, c.launcher.procs["broker-a-0"].create_time) in manifest_procs(c.run_dir)
    c.wait_for(lambda: ns_broker(c, "broker-a-0", "register", after=killed), 30, "broker-a-0 registered again")
    assert [e["fault_id"] for e in read_events(c.run_dir, "fault.end")] == ["f1", "f1.restart"]


# docs/design.md §5 "Message bodies": text rich in line breaks a JSON line keeps unescaped, and bytes
HOSTILE = {**WITH_PRODUCER, "producers": [{**WITH_PRODUCER["producers"][0], "body": "mixed"}],
           "consumers": [{"group": "cg-1", "subscribe": ["T"]}]}


def test_a_restarted_master_brings_back_every_acked_body_and_they_are_all_consumed(start_cluster) -> None:
    """The consumer is paused while broker-a-0 takes 40 acked ``mixed`` bodies, so that they are
    only in its store when it is SIGKILLed; restarted, it must hold them all again (per queue) and
    the resumed consumer consume every one: the report counts none lost."""
    c = start_cluster(HOSTILE)
    rd = c.run_dir
    c.wait_for(lambda: consumed(rd, "cg-1"), 60, "a first consumed message")
    with c.pause("cg-1-0"):
        paused_at = host_ms()
        c.wait_for(lambda: len([e for e in acked(rd, "pg-1-0").values() if e["ts"] > paused_at]) >= 40, 60,
                   "40 messages acked while the consumer is paused")
        kill = c.kill("broker-a-0", restart_after="10s")
        killed_at = fault_events(c, kill.fault_id)[0]["ts"]
        c.wait_for(lambda: not kill.active, 60, "broker-a-0 restarted")
        c.wait_for(lambda: ns_broker(c, "broker-a-0", "register", after=killed_at), 30, "broker-a-0 registered")
    before_kill = {m: e for m, e in acked(rd, "pg-1-0").items() if e["ts"] < killed_at}
    per_queue = Counter(f"T:{e['queue_id']}" for e in before_kill.values())
    restored = c.state("broker-a-0")["queues"]
    assert all(restored.get(q, 0) >= n for q, n in per_queue.items()), (
        f"acked before the kill, per queue: {dict(per_queue)}; the restarted store holds {restored}")
    c.wait_for(lambda: set(before_kill) <= set(consumed(rd, "cg-1")), 30,
               f"the {len(before_kill)} messages acked before the kill consumed")
    m = document(analyse_dirs([str(c.finish())], plots_too=False)[0])["consumption"]
    [t] = m["by_topic"]
    assert (m["lost"], m["lost_per_group"], m["gone"]) == (0, 0, 0) and t["acked"] >= len(before_kill), m


def test_a_pid_the_run_did_not_spawn_is_never_signalled(start_cluster) -> None:
    c = start_cluster(BASE)
    inj = Injector(c.launcher)  # the injector's own signal safety is under test
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with pytest.raises(UnsafeSignal, match="not a process this run spawned"):
            c.launcher.signal("pg-9-0", signal.SIGSTOP)
        # broker-b-0 dies; then its pid is "reused" by a stranger: only the pid matches the record
        inj.start(KillFault("k1", ("broker-b-0",)))
        record = c.launcher.procs["broker-b-0"].ident
        with pytest.raises(ProcessGone):  # the pidfd of a reaped process reaches nobody
            record.send(signal.SIGSTOP)
        c.launcher.procs["broker-b-0"].ident = SpawnedProcess(stranger.pid, record.create_time, "broker-b-0", None)
        with pytest.raises(UnsafeSignal, match="pid reused"):
            c.launcher.signal("broker-b-0", signal.SIGSTOP)
        with pytest.raises(UnsafeSignal, match="pid reused"):
            SpawnedProcess.from_manifest("broker-b-0", stranger.pid, record.create_time)
        inj.stop("k1", restart=False)
        with pytest.raises(UnsafeSignal):
            inj.start(PauseFault("z1", ("broker-b-0",)))
        assert inj.active() == []
        assert psutil.Process(stranger.pid).status() != psutil.STATUS_STOPPED
        assert alive(stranger.pid, psutil.Process(stranger.pid).create_time())
    finally:
        stranger.kill()
        stranger.wait()
