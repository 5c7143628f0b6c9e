"""DLedger failover on real processes (docs/rocketmq-model.md §8): topologies/seed-dledger-failover.yaml
as ``rmqemu launch`` runs it (a leader killed, paused and cut off, each named as the fault fires),
judged by its own ``expect:`` in Spark and checked against the run's events; and the fault-free
control, topologies/dledger-control.yaml, in which each group elects once and never again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqemu.emulator.cli.launch import run_topology
from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.emulator.testing import expect_metrics, read_events
from rmqemu.faults.launch_glue import build_plan
from tests.eventdoc import contract_problems
from tests.integration.seeds_lib import topology


def launched(name: str, run_dir: Path) -> tuple[Any, Path]:
    topo = load_topology(topology(name))
    result = run_topology(topo, run_dir=run_dir, plan=build_plan(topo), progress=False, log=lambda m: None)
    assert result.died == []
    return topo, result.run_dir


def test_a_moving_master_is_routed_within_dledgers_band_and_loses_nothing(tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo, rd = launched("seed-dledger-failover", tmp_path / "run")
    m = metrics(rmqemu_spark, str(rd), only=["failover", "consumption", "drain"])
    expect_metrics(m, topo.expect or {}, rd)
    starts = {e["fault"]: e for e in read_events(rd, "fault.start")}
    # each fault hit the peer that led broker-a when it fired, and a failover followed each
    leaders = [(e["ts"], e["node"]) for e in read_events(rd, "dledger.role") if e["role"] == "LEADER"
               and e["group"] == "broker-a"]
    for fault in ("kill", "pause", "partition"):
        at = starts[fault]["ts"]
        before = [n for t, n in leaders if t < at][-1]
        hit = starts[fault]["targets"]
        assert before in hit, (fault, before, hit)
        assert any(t > at and n != before for t, n in leaders), f"no new leader after the {fault}"
    changes = m["failover"]["changes"]
    assert sorted(c["fault"] for c in changes) == ["kill", "partition", "pause"]
    assert all(c["group"] == "broker-a" and c["hit"] == "leader" for c in changes)
    # broker-b, never faulted, elected once
    assert len([e for e in read_events(rd, "dledger.role") if e["group"] == "broker-b" and e["role"] == "LEADER"]) == 1
    assert contract_problems(rd) == []


def test_the_fault_free_control_elects_each_group_once_and_never_again(tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo, rd = launched("dledger-control", tmp_path / "run")
    m = metrics(rmqemu_spark, str(rd), only=["failover", "misrouted", "consumption", "drain"])
    expect_metrics(m, topo.expect or {}, rd)
    roles = read_events(rd, "dledger.role")
    for group in ("broker-a", "broker-b"):
        leaders = {e["node"] for e in roles if e["group"] == group and e["role"] == "LEADER"}
        assert len(leaders) == 1, (group, leaders)
        leader = leaders.pop()
        # after the first election no member of the group ran for a later term until the run stopped
        # (a member still settling into that election may turn CANDIDATE of its term just after the
        # leader won it: that is the same election)
        stop = read_events(rd, "run.stop")[0]["ts"]
        term = min((e["ts"], e["term"]) for e in roles if e["node"] == leader and e["role"] == "LEADER")[1]
        late = [e for e in roles if e["group"] == group and e["ts"] < stop and e["term"] > term]
        assert late == [], late
