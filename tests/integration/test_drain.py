"""The end-of-run drain on real processes (docs/design.md §6): producers stop, ``run.stop``, the
consumers catch up to the brokers' max offsets (``run.drain``), then the rest stops.

Checked from the events alone: every message a producer got ``ok`` for is consumed by every
group, and a group that cannot consume (killed, not restarted) makes the drain end at its bound,
not completed, naming the group; a Ctrl-C during the drain ends only the drain."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

from rmqemu import emulator
from rmqemu.emulator.cli.launch import run_topology
from rmqemu.emulator.launcher.run_events import read_events
from rmqemu.emulator.launcher.topology_load import parse_topology
from rmqemu.emulator.testing import kill_survivors, run_processes
from tests.faults.live import rmqemu, wait_until

GROUPS = {"cg-a": 2, "cg-b": 3, "cg-c": 4}


def _acked(run_dir: Path) -> set[str]:
    return {e["msg_id"] for e in read_events(run_dir, "send") if e["outcome"] == "ok"}


def _consumed_by(run_dir: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for e in read_events(run_dir, "consume"):
        out.setdefault(e["group"], set()).update(e["msg_ids"])
    return out


def _order(run_dir: Path) -> list[str]:
    """The launcher's lines and the clients' exits, in time order, as role names."""
    roles = {"producer": "producer.exit", "consumer": "consumer.exit"}
    out = []
    for e in read_events(run_dir):
        if e["kind"] in ("run.stop", "run.drain"):
            out.append(e["kind"])
        elif e["kind"] == "node.exit" and e.get("role") in roles:
            out.append(roles[e["role"]])
    return out


def test_a_fault_free_run_with_three_groups_ends_with_every_acked_message_consumed_by_each(
        tmp_path: Path, rmqemu_spark: Any) -> None:
    topo = parse_topology({
        "name": "drain", "seed": 3, "timing": {"scale": 0.05, "drainTimeout": "200s"}, "namesrvs": 1,
        "brokers": [{"name": "broker-a", "slaves": 0}, {"name": "broker-b", "slaves": 0}],
        "topics": [{"name": "T", "brokers": ["broker-a", "broker-b"], "queues": 4}],
        "producers": [{"group": "pg", "topics": ["T"], "rate": 10}],
        "consumers": [{"group": g, "instances": n, "subscribe": ["T"]} for g, n in GROUPS.items()],
        "duration": "60s",
    }, "drain")
    result = run_topology(topo, run_dir=tmp_path / "run", progress=False, log=lambda _m: None)
    run_dir = result.run_dir
    assert result.ok, result.died

    (drained,) = read_events(run_dir, "run.drain")
    assert drained["completed"] is True and drained["lag_total"] == 0 and drained["lag_left"] == []
    assert drained["unreadable"] == []
    acked = _acked(run_dir)
    assert len(acked) > 50  # the producer really ran (60 cluster s at rate 10)
    consumed = _consumed_by(run_dir)
    for group in GROUPS:
        missing = acked - consumed.get(group, set())
        assert not missing, f"{group} never consumed {len(missing)} acked message(s): {sorted(missing)[:5]}"

    order = _order(run_dir)  # producers stop, the run's end, the drain, then the consumers
    assert order.index("run.stop") > max(i for i, k in enumerate(order) if k == "producer.exit")
    assert order.index("run.drain") == order.index("run.stop") + 1
    assert order.index("run.drain") < min(i for i, k in enumerate(order) if k == "consumer.exit")

    # The report says the same (docs/design.md §7 loss per (group, topic)): 0 lost, for each group.
    from rmqemu.reports.job import metrics
    c = metrics(rmqemu_spark, str(run_dir))["consumption"]
    assert (c["lost"], c["lost_per_group"]) == (0, 0)
    assert {(r["group"], r["topic"], r["expected"], r["lost"]) for r in c["groups"]} == {
        (g, "T", len(acked), 0) for g in GROUPS}


TWO_GROUPS: dict[str, Any] = {
    "name": "drain-dead", "seed": 4, "timing": {"scale": 0.05, "drainTimeout": "20s"}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 0}],
    "topics": [{"name": "T", "brokers": ["broker-a"], "queues": 2}],
    "producers": [{"group": "pg", "topics": ["T"], "rate": 10}],
    "consumers": [{"group": "cg-live", "subscribe": ["T"]}, {"group": "cg-dead", "instances": 2, "subscribe": ["T"]}],
    "duration": "600s",
}


def test_a_group_whose_consumers_were_killed_leaves_the_drain_not_completed_at_its_bound(tmp_path: Path) -> None:
    with emulator.Cluster(TWO_GROUPS, run_dir=tmp_path / "run") as c:
        c.wait_routed("T")
        c.kill("group:cg-dead")  # no restart: finish() heals faults, killed nodes stay down
        # messages acked from now on are ones the dead group can never consume (counting every ack
        # since the start let a slow host pass this wait with none: cg-dead then had it all)
        before = _acked(c.run_dir)
        c.wait_for(lambda: len(_acked(c.run_dir) - before) >= 5, 60, "a few acked messages after the kill")
        for node in c.nodes("consumer"):
            if node.startswith("cg-dead"):
                assert not c.launcher.procs[node].alive()
        run_dir = c.finish()

    (drained,) = read_events(run_dir, "run.drain")
    assert drained["completed"] is False
    assert drained["waited_ms"] >= drained["timeout_ms"] == 20 * 1000 * 0.05  # it waited its bound, then gave up
    behind = {r["group"] for r in drained["lag_left"]}
    assert "cg-dead" in behind
    assert drained["lag_total"] >= sum(r["lag"] for r in drained["lag_left"] if r["group"] == "cg-dead") > 0
    # the rest of the shutdown went on as usual: every node has its exit, none had to be SIGKILLed
    exits = read_events(run_dir, "node.exit")
    assert {e["node"] for e in exits} == set(c.nodes())
    killed_by_shutdown = [e["node"] for e in exits
                          if e.get("signal") == signal.SIGKILL and not e["node"].startswith("cg-dead")]
    assert killed_by_shutdown == []


NEVER_DRAINS = """
name: drain-sigint
timing: {scale: 0.01, drainTimeout: 3000s}
namesrvs: 1
brokers:
  - {name: broker-a, slaves: 0}
topics:
  - {name: T, brokers: [broker-a], queues: 4}
  - {name: U, brokers: [broker-a], queues: 4}
producers:
  - {group: pg, topics: [T, U], rate: 5}
consumers:   # one group, two subscriptions: the queues each instance gets of the other's topic are never consumed
  - {group: cg, subscribe: [T]}
  - {group: cg, subscribe: [U]}
duration: 30s
"""


def test_a_signal_during_the_drain_ends_it_and_the_nodes_still_stop_gracefully(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(NEVER_DRAINS)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(rmqemu("launch", "t.yaml", "--run-dir", str(run_dir), "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    procs: list[tuple[int, float]] = []
    try:
        faults = run_dir / "faults.jsonl"
        wait_until(lambda: faults.exists() and "run.start" in faults.read_text(), 90, "the cluster to start")
        procs = run_processes(run_dir)
        wait_until(lambda: "run.stop" in faults.read_text(), 90, "the producers to stop and the drain to begin")
        assert "run.drain" not in faults.read_text()  # it cannot complete, and its bound is 30 wall s
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=90)
        assert proc.returncode == 130, err
        (drained,) = read_events(run_dir, "run.drain")
        assert drained["interrupted"] is True and drained["completed"] is False and drained["lag_total"] > 0
        assert {r["group"] for r in drained["lag_left"]} == {"cg"}
        exits = read_events(run_dir, "node.exit")
        assert {e["node"] for e in exits} == {"namesrv-0", "broker-a-0", "pg-0", "cg-0", "cg-1"}
        assert all(e.get("code") == 0 for e in exits), exits  # the rest of the shutdown stayed graceful
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_survivors(procs)
