"""Routes behind two RocketMQ 5 proxies (topologies/seed-proxy-route.yaml, issue 42): emulated 5.x
clients through both proxies, broker-a's master killed and restarted, judged by the seed's own
``expect:`` in Spark and checked against the run's events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqemu.emulator.cli.launch import run_topology
from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.emulator.testing import expect_metrics, read_events
from rmqemu.faults.launch_glue import build_plan
from tests.eventdoc import contract_problems
from tests.integration.seeds_lib import topology


def test_proxy_and_client_views_go_stale_and_sends_fail_through_the_kill(tmp_path: Path, rmqemu_spark: Any) -> None:
    from rmqemu.reports.job import metrics

    topo = load_topology(topology("seed-proxy-route"))
    result = run_topology(topo, run_dir=tmp_path / "run", plan=build_plan(topo), progress=False, log=lambda m: None)
    assert result.died == []
    rd = result.run_dir
    m = metrics(rmqemu_spark, str(rd), only=["sends", "misrouted", "staleness", "consumption", "drain"])
    expect_metrics(m, topo.expect or {}, rd)
    stale = {r["client"]: r for r in m["staleness"]["clients"]}
    for proxy in ("proxy-0", "proxy-1"):  # each proxy's own view named the dead master for a while
        assert stale[proxy]["stale_over_ms"] > 0, stale[proxy]
    # the clients wrote their own lines, each through the proxies their endpoints put first
    sends = read_events(rd, "send")
    assert {e["mode"] for e in sends} == {"grpc"} and {e["node"] for e in sends} == {"pg5-0", "pg5b-0"}
    assert {e.get("proxy") for e in sends if e["node"] == "pg5-0"} == {"proxy-0"}
    assert {e.get("proxy") for e in sends if e["node"] == "pg5b-0"} == {"proxy-1"}
    failed = [e for e in sends if e["outcome"] != "ok"]
    assert failed and all(e["attempt"] <= 3 for e in sends)
    consumes = read_events(rd, "consume")
    assert {e["node"] for e in consumes} == {"cg5-0", "cg5-1"}
    assert max(a for e in consumes for a in e["delivery_attempts"]) >= 2  # un-acked ones came back
    assert contract_problems(rd) == []
