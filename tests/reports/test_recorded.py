"""The analysis gives the recorded real runs the metrics.json the previous engine gave them,
up to float rounding: in this process (no JVM) and in Spark, both runs in one job. They were
written before queues were objects: every line keeps the event registry once converted as the
report converts it (docs/design.md §6, "Older runs"), and the queues are all that differs. What
was added to metrics.json since they were recorded (:func:`added`: :data:`NEWER`, the order,
delays, retries, failover, transactions and POP sections) is checked apart: the runs have nothing for it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.eventdoc import contract_problems, unreadable_files
from tests.reports.recorded import RUNS, rounded, unpack


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("recorded")
    return {name: unpack(name, root) for name in RUNS}


def added(got: Any, want: Any, path: str = "") -> tuple[Any, dict[str, Any]]:
    """``(got without what want lacks, {path: value} of what it lacks)``: keys are followed into
    dicts, and into the rows of tables of the same length (``[]`` in the path)."""
    if isinstance(got, dict) and isinstance(want, dict):
        common, extra = {}, {}
        for key, value in got.items():
            if key in want:
                common[key], more = added(value, want[key], f"{path}.{key}" if path else key)
                extra.update(more)
            else:
                extra[f"{path}.{key}" if path else key] = value
        return common, extra
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        pairs = [added(g, w, f"{path}[]") for g, w in zip(got, want, strict=True)]
        extra = {}
        for _, more in pairs:
            for key, value in more.items():
                extra.setdefault(key, []).append(value)
        return [c for c, _ in pairs], {k: v[0] if len(set(map(repr, v))) == 1 else v for k, v in extra.items()}
    return got, {}


#: The fates of unconsumed messages, the faults' late deliveries and the DLedger misrouting reason:
#: neither run delayed, retried or ordered a message, no consumer group left before the end, and
#: neither had a DLedger group.
NEWER = {
    **{f"consumption.{fate}": 0 for fate in ("gone", "dead_lettered", "retrying", "delayed", "gone_per_group")},
    **{f"consumption.{table}[].{fate}": 0 for table in ("by_topic", "groups")
       for fate in ("gone", "dead_lettered", "retrying", "delayed")},
    "staleness.faults[].late_deliveries": 0, "staleness.faults[].late_max_ms": 0.0,
    "staleness.faults[].late_max_cluster_s": 0.0,
    "timing.window_ms": 1000.0, "timing.window_cluster_s": 100.0,  # both runs at 0.01
    "misrouted.by_reason.stale_master": 0,  # neither run had a DLedger group
    "staleness.clients[].holder": "client", "staleness.clients[].via": None,  # neither run had a proxy
}


def same(got: dict, want: dict) -> bool:
    got, extra = added(got, want)
    delays, retries, order = extra.pop("delays"), extra.pop("retries"), extra.pop("order")
    failover = extra.pop("failover")  # neither run had a DLedger group
    assert failover["elections"] == failover["stale_master_sends"]["total"] == failover["max_no_master_ms"] == 0
    assert failover["groups"] == failover["changes"] == failover["views"] == failover["lost"] == []
    tx = extra.pop("transactions")  # neither run sent a half: nothing but zeros and a row per fault
    assert (tx["halves"]["sent"], tx["committed"]["total"], tx["checks"]["sent"], tx["visible"]["n"]) == (0, 0, 0, 0)
    assert tx["by_checks"] == tx["groups"] == [] and not any(f["messages"] or f["checks"] for f in tx["faults"])
    pop, holders = extra.pop("pop"), extra.pop("staleness.by_holder")  # no proxy, no POP, no timed message
    assert pop["leases"]["granted"] == pop["acks"]["proxy"]["total"] == pop["fifo"]["messages"] == 0
    assert pop["fifo"]["groups"] == [] and not any(f["leases"] for f in pop["faults"])
    assert holders["client"]["views"] == got["staleness"]["clients_total"]["views"] and holders["proxy"]["views"] == 0
    timed = delays.pop("timed")
    assert (timed["parked"], timed["sent"], timed["by_topic"]) == (0, 0, [])
    measured = extra.pop("timing.measured_ms")  # run.start to the last event: each run's own
    assert 0 < measured <= got["duration_ms"] and extra.pop("timing.measured_cluster_s") == pytest.approx(measured / 10)
    assert order["messages"] == order["violations"] == order["failed_sends"]["total"] == 0
    assert order["groups"] == [] and order["remaps"]["changes"] == []
    assert {k: NEWER.get(k, "not added") for k in extra} == extra  # tables without rows have no new columns
    assert {k for k in NEWER if "[]" not in k} <= set(extra)
    assert (delays["tolerance_cluster_s"], delays["by_topic"], retries["by_reconsume_times"], retries["dlq"]) == (
        1.0, [], [], [])
    assert not any(v for k, v in {**delays, **retries}.items() if not k.startswith("tolerance_")), (delays, retries)
    return json.dumps(rounded(got), sort_keys=True) == json.dumps(rounded(want), sort_keys=True)


@pytest.mark.parametrize("name", RUNS)
def test_every_line_of_a_recorded_run_keeps_the_registry_once_converted(recorded, name: str) -> None:
    run, _ = recorded[name]
    assert contract_problems(run, upgrade=True) == []
    as_written = contract_problems(run)
    queues = (".publish_queues[", ".subscribe_queues[", ".allocated[", "... and ")  # and how many more
    assert as_written and all(any(q in p for q in queues) for p in as_written), as_written
    assert {p.split(": ")[0] for p in unreadable_files(run)} >= {"pg-1-0.jsonl"}  # the typed reader needs it


@pytest.mark.parametrize("name", RUNS)
def test_the_local_engine_gives_the_recorded_metrics(recorded, name: str) -> None:
    run, want = recorded[name]
    got = document(analyse_dirs([str(run)], plots_too=False)[0])
    assert got["events"] > 500 and got["sends"]["attempts"] > 0
    assert same(got, want)


@pytest.mark.spark
def test_spark_gives_both_recorded_runs_their_metrics_in_one_job(spark, recorded) -> None:
    from rmqemu.reports import job

    docs = job.compute_many(spark, [str(recorded[name][0]) for name in RUNS])
    for name in RUNS:
        run, want = recorded[name]
        assert same(docs[str(run)], want), name
