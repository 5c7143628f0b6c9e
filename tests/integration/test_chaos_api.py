"""``emulator.Cluster``: the fault verbs as methods, over real processes (docs/design.md §8).

Effects are read from the nodes' own events and processes, never from the API's return values
alone: a handle saying "pause" proves nothing until the process is stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil
import pytest

from rmqemu import emulator
from rmqemu.emulator.launcher.run_dir import append_event
from rmqemu.emulator.node.clock import host_ms
from rmqemu.emulator.testing import expect_metrics, read_events
from rmqemu.errors import ClusterError, FaultError, SpecError

TOPOLOGY: dict[str, Any] = {
    "name": "api", "seed": 5, "timing": {"scale": 0.01}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 0}, {"name": "broker-b", "slaves": 0}],
    "topics": [{"name": "T", "brokers": ["broker-a", "broker-b"], "queues": 2}],
    "producers": [{"group": "pg", "topics": ["T"], "rate": 5, "body": "mixed"}],  # docs/design.md §5
    "consumers": [{"group": "cg", "subscribe": ["T"]}],
    "duration": "600s",
}


def _status(c: emulator.Cluster, node: str) -> str:
    return psutil.Process(c.launcher.procs[node].pid).status()


def _fault_lines(run_dir: Path, kind: str, fault_id: str) -> list[dict[str, Any]]:
    return read_events(run_dir, kind, where=lambda e: e.get("fault_id") == fault_id)


def test_kill_with_restart_pause_as_a_block_and_heal_at_finish(tmp_path: Path) -> None:
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        c.wait_routed("T")
        killed = c.kill("broker-b-0", restart_after="20s")
        old_pid = c.launcher.procs["broker-b-0"].pid
        assert killed.kind == "kill" and killed.targets == ["broker-b-0"] and killed.active
        c.wait_for(lambda: not killed.active, 30, "the kill's restart")  # ends by itself, in cluster time
        c.wait_for(lambda: c.launcher.procs["broker-b-0"].pid != old_pid and c.launcher.procs["broker-b-0"].alive(),
                   30, "broker-b-0 restarted")
        assert [e["reason"] for e in _fault_lines(c.run_dir, "fault.end", killed.fault_id)] == ["scheduled"]

        with c.pause("broker-a-0") as paused:
            c.wait_for(lambda: _status(c, "broker-a-0") == psutil.STATUS_STOPPED, 10, "SIGSTOP")
            with pytest.raises(FaultError, match="broker-a-0"):
                c.pause("broker-a-0")  # one injector: the node is held by the first pause
            c.sleep("5s")
        assert not paused.active
        assert _status(c, "broker-a-0") != psutil.STATUS_STOPPED

        cut = c.partition("pg-0", from_="broker-a-0", oneway=True)
        skewed = c.skew("namesrv-0", "+130s")
        assert {f["fault_id"] for f in c.faults()} == {cut.fault_id, skewed.fault_id}
        run_dir = c.finish()  # heals what is still active, then stops every node
    assert run_dir == tmp_path / "run"
    for fault in (cut, skewed):
        assert len(_fault_lines(run_dir, "fault.end", fault.fault_id)) == 1
    assert not any(p.alive() for p in c.launcher.procs.values())


def test_link_delay_shows_in_send_latency_and_resume_ends_a_timed_pause(tmp_path: Path) -> None:
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        c.wait_routed("T")
        with c.link("pg-0", to=["broker-a-0", "broker-b-0"], delay="300ms") as link:  # 3 wall ms at 0.01
            since = c.events("fault.start")[-1]["ts"]

            def delayed() -> list[float]:  # ok sends whose attempt started under the fault
                return [e["latency_ms"] for e in c.events("send", "pg-0")
                        if e["outcome"] == "ok" and e["ts"] - e["latency_ms"] > since]
            c.wait_for(lambda: len(delayed()) >= 5, 30, "five sends through the delayed link")
            assert link.active and min(delayed()) >= 3.0  # every request crossed the 3 wall ms delay

        pause = c.pause("consumer", duration="10m")
        c.wait_for(lambda: _status(c, "cg-0") == psutil.STATUS_STOPPED, 10, "the consumer paused")
        assert c.resume("cg-0") == [pause.fault_id]
        assert not pause.active and _status(c, "cg-0") != psutil.STATUS_STOPPED


def test_bad_arguments_are_the_error_trees_errors_and_a_role_error_breaks_the_run(tmp_path: Path) -> None:
    """... and a ``node.error`` (what a node's runtime writes when its role raises: a bug in
    rmqemu) makes the ``with`` block raise ClusterError once the run is finished."""
    with pytest.raises(ClusterError, match=r"role error\(s\), a bug in rmqemu: broker-a-0 \(2\)"), \
            emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        for error in ("TypeError: x", "KeyError: '\u2603'"):
            append_event(c.run_dir / "events" / "broker-a-0.jsonl", {"ts": host_ms(), "node": "broker-a-0",
                                                                     "kind": "node.error", "local_ms": host_ms(),
                                                                     "error": error})
        with pytest.raises(FaultError, match="no-such-node"):
            c.kill("no-such-node")
        with pytest.raises(SpecError):
            c.pause("broker-a-0", duration="soon")
        with pytest.raises(SpecError):
            c.sleep("-3s")
        with pytest.raises(FaultError, match="no active fault"):
            c.heal("i-999")
        assert c.faults() == []


def test_a_failing_test_body_still_stops_every_process(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="the test failed"):
        with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
            pids = [p.pid for p in c.launcher.procs.values()]
            c.pause("broker-a-0")
            raise RuntimeError("the test failed")
    assert pids and not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                            for pid in pids)
    assert len(read_events(tmp_path / "run", "fault.end")) == 1  # the pause was healed on the way out


def test_metrics_in_a_test_on_the_workers_spark_and_an_expectation(start_cluster: Any, rmqemu_spark: Any) -> None:
    c = start_cluster(TOPOLOGY, duration="60s")
    c.wait_routed("T")
    c.wait_for(lambda: len(c.events("consume")) >= 20, 60, "twenty messages consumed")
    expect = {"consumption.lost": 0, "sends.ok": {"min": 20}}
    part = c.metrics(rmqemu_spark, only=expect)  # finishes the run: producers stop with the rest
    assert c.finished and set(part) >= {"consumption", "sends"} and "staleness" not in part
    assert c.metrics(rmqemu_spark, only=["sends"]) is part  # held already: not computed again
    metrics = c.metrics(rmqemu_spark)  # the whole document: computed now
    assert metrics is not part and "staleness" in metrics and metrics["sends"] == part["sends"]
    assert metrics["consumption"] == part["consumption"] and metrics["sends"]["ok"] >= 20
    assert c.metrics(rmqemu_spark, only=expect) is metrics
    verdicts = expect_metrics(metrics, {"consumption.lost": 0, "sends.ok": {"min": 20}}, c.run_dir)
    assert [v.passed for v in verdicts] == [True, True]
    with pytest.raises(AssertionError) as failed:
        expect_metrics(metrics, {"sends.ok": {"max": 3}}, c.run_dir)
    assert "FAIL sends.ok = " in str(failed.value) and "over the max of 3" in str(failed.value)
    assert str(c.run_dir) in str(failed.value)
