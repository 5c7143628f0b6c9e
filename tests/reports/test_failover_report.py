"""The DLedger failover section of a report, end to end on hand-made run dirs (the kill, pause and
partition runs of tests/core/failover_runs.py): metrics.json's ``failover`` paths (every one
registered, every registered one written), an ``expect:`` over them, the failover plot and
report.html's tables; and the Spark engine giving the section the local engine gives."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqemu import metric_failover, metric_paths
from rmqemu.reports import html, plotdata, plots
from rmqemu.reports.core.failover_sends import GOT
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from rmqemu.reports.summary import one_line
from rmqemu.verdicts import judge, parse_expect
from tests.core.failover_runs import ADDR, PEERS, kill_run, node, partition_run, pause_run
from tests.reports.runlog import write_run
from tests.reports.test_verdicts_report import leaf_paths

RUNS = {"kill": kill_run, "pause": pause_run, "partition": partition_run}


def run_dir(root: Path, name: str) -> str:
    """The run as a run dir: the injector's and launcher's lines in faults.jsonl, the DLedger peers
    in the manifest by their group and address (no broker_id: the group elects its master)."""
    lines = RUNS[name]()
    faults = [x for x in lines if x["node"] in ("injector", "launcher")]
    events = [x for x in lines if x["node"] not in ("injector", "launcher")]
    nodes: dict[str, dict[str, Any]] = {node(p): {"role": "broker", "broker": "broker-a", "addr": ADDR[p]}
                                        for p in PEERS}
    for x in events:
        if x["kind"] == "node.start" and x["node"] not in nodes:
            nodes[x["node"]] = {"role": x["role"], **({"broker": x["broker"], "broker_id": 0} if "broker" in x
                                                      else {})}
    return str(write_run(root / name, events, faults, nodes=nodes, scale=1.0))


@pytest.fixture(scope="module")
def docs(tmp_path_factory: Any) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("failover")
    return {name: document(analyse_dirs([run_dir(root, name)])[0]) for name in RUNS}


def test_the_failover_section_of_a_killed_leader(docs: dict[str, dict[str, Any]]) -> None:
    m = docs["kill"]
    f = m["failover"]
    assert (f["elections"], f["failovers"], f["max_election_ms"], f["max_no_master_ms"], f["no_master_ms"]) == (
        2, 1, 6301.0, 6401.0, 6401.0)
    assert (f["max_namesrv_stale_ms"], f["max_client_stale_ms"], f["unseen_views"], f["max_rto_ms"]) == (
        6396.0, 29001.0, 0, 29000.0)
    assert (f["acked_lost"], f["duplicates"], f["reconsumed"], f["truncated"]) == (1, 0, 1, 0)
    assert f["stale_master_sends"]["total"] == 3 and f["stale_master_sends"]["by_got"]["refused"] == 3
    assert f["max_no_master_cluster_s"] == 6.401  # scale 1: a twin for every duration
    [change] = f["changes"]
    assert (change["old_node"], change["node"], change["fault_id"], change["stopped_offset_ms"]) == (
        "broker-a-n0", "broker-a-n1", "f1", 999.0)
    # the sends reached the nodes their addresses name: one attempt each, the old master's dead
    assert m["sends"]["attempts"] == 6 and m["misrouted"]["by_reason"]["dead"] == 3
    assert f["lost"] == [{"group": "broker-a", "consumer_group": "cg", "topic": "T", "msg_id": "m6"}]
    assert "1 DLedger failover(s)" in one_line(m) and "1 acked message(s) lost by a DLedger group" in one_line(m)
    rules = parse_expect({"failover.failovers": 1, "failover.acked_lost": 0, "failover.max_client_stale_cluster_s":
                          {"max": 30}, "failover.stale_master_sends.by_got.refused": {"min": 1}}, "expect")
    assert [v.passed for v in judge(rules, m, "expect")] == [True, False, True, True]


def test_the_pause_and_partition_sections(docs: dict[str, dict[str, Any]]) -> None:
    p, c = docs["pause"]["failover"], docs["partition"]["failover"]
    assert (p["unseen_views"], p["max_namesrv_stale_ms"], p["stale_master_sends"]["by_got"]) == (
        2, 39000.0, {"ok": 0, "timeout": 1, "refused": 0, "not_available": 1, "system_error": 1, "other": 0})
    assert [(x["fault_id"], x["hit"], x["failovers"]) for x in p["faults"]] == [("f1", "leader", 1),
                                                                                ("f2", "follower", 0)]
    assert (c["duplicates"], c["truncated"], c["max_rto_ms"], c["acked_lost"]) == (1, 2, 6200.0, 0)
    # the misrouting reason of a send to a member whose broker was not the master (docs/design.md §7)
    pause, cut = docs["pause"]["misrouted"]["by_reason"], docs["partition"]["misrouted"]["by_reason"]
    assert (pause["paused"], pause["stale_master"], cut["stale_master"], cut["partitioned"]) == (1, 2, 2, 0)


def test_every_failover_path_is_registered_and_written(docs: dict[str, dict[str, Any]]) -> None:
    got = set().union(*(leaf_paths(d) for d in docs.values()))
    mine = {p for p in got if p.startswith("failover")}
    registry = metric_paths.all_paths()
    # an empty table reads as a leaf
    assert sorted(p for p in mine if metric_paths.find(p) is None and p + "[]" not in registry) == []
    registered = [p for p in registry if p.startswith("failover")]
    assert sorted(p for p in registered if p not in got and not (p.endswith("_cluster_s") and any(
        q.startswith(p[:-len("_cluster_s")]) for q in got))) == []
    assert metric_failover.GOT == GOT


def test_the_plot_and_the_pages_tables(tmp_path: Path) -> None:
    result = analyse_dirs([run_dir(tmp_path, "kill")])[0]
    data = plotdata.assemble(result)
    assert data.failover_groups == ["broker-a"]
    figs = plots.render_all(data, tmp_path)
    [fig] = [f for f in figs if f.file.startswith("failover-")]
    assert fig.file == "failover-0-broker-a.png" and (tmp_path / fig.file).stat().st_size > 10_000
    page = html.render(document(result), figs, tmp_path, [], [])
    for title in ("DLedger groups", "Acked messages lost by a DLedger group", "Failovers", "Faults on DLedger members",
                  "Sends to an old master",
                  "Route views behind a moving master", "Producer recovery after a failover",
                  "Longest without a master"):
        assert title in page, title


@pytest.mark.spark
def test_spark_gives_the_failover_section_the_local_engine_gives(spark: Any, tmp_path: Path) -> None:
    """The three runs in one Spark job, cut node by node as the engine cuts a large run."""
    from rmqemu.reports.engine import analyse_runs, names
    from rmqemu.reports.metrics import assemble, metric_rows, queries_of, sections_of
    from rmqemu.reports.results import RunResult

    runs = [run_dir(tmp_path, name) for name in RUNS]
    queries = queries_of(sections_of(["failover"]))
    for share_bytes in (1 << 24, 0):  # whole runs, then every node a share of its own
        got = analyse_runs(spark, runs, names(["m."]), queries=queries, share_bytes=share_bytes)
        for res in got:
            doc = assemble(res.meta, metric_rows(RunResult(res.meta, res.tables), queries), ["failover"])
            want = document(analyse_dirs([res.meta.key])[0])["failover"]
            assert doc["failover"] == want, (res.meta.key, share_bytes)
    assert want["duplicates"] == 1  # the partition run's: a value, not just a key
