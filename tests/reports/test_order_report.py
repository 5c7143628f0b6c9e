"""The order section of a report, end to end on a hand-made run dir (the remap of
tests/core/test_order.py): metrics.json's ``order`` paths, an ``expect:`` over them, the order plot
and report.html's order tables. Analysed in this process (reports.local: the functions Spark runs)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqemu.reports import html, plotdata, plots
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from rmqemu.verdicts import judge, parse_expect
from tests.core.test_order import handover_run, real_client_run, remap_run
from tests.reports.runlog import write_run


def test_the_order_section_its_expectations_plot_and_tables(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", remap_run(), scale=1.0)
    result = analyse_dirs([str(run)])[0]
    m = document(result)
    o = m["order"]
    assert (o["messages"], o["consumed"], o["keys"], o["keys_violated"], o["queues"]) == (2, 2, 1, 1, 0)
    assert (o["out_of_order"], o["duplicates"], o["violations"], o["by_cause"]) == (
        1, 0, 1, {"remapped": 1, "handover": 0, "redelivery": 0})
    change = o["remaps"]["changes"][0]
    assert (o["remaps"]["keys"], o["remaps"]["moves"], len(o["remaps"]["changes"])) == (1, 1, 1)
    assert change["offset_ms"] == 5.0 and change["offset_cluster_s"] == 0.005  # the run's first event is at 0
    assert (change["stale_before"], change["stale_after"], change["out_of_order"]) == (True, False, 1)
    assert o["failed_sends"] == {"total": 1, "stale_route": 1, "no_route": 0, "misrouted": 1,
                                 "by_reason": {"dead": 1, "paused": 0, "partitioned": 0, "stale_master": 0,
                                               "not_master": 0, "no_topic": 0, "bad_queue": 0}}
    assert o["availability"]["max_unavailable_ms"] == 2.0 and o["availability"]["unavailable_keys"] == 1
    rules = parse_expect({"order.remaps.keys": {"min": 1}, "order.by_cause.remapped": 1,
                          "order.failed_sends.stale_route": {"min": 1}, "order.duplicates": 0}, "expect")
    assert [v.passed for v in judge(rules, m, "expect")] == [True] * 4

    data = plotdata.assemble(result)
    assert list(data.order_keys.itertuples(index=False, name=None)) == [
        ("k", "broker-a:0", 0.0015, 0.0055), ("k", "broker-b:0", 0.0055, 0.0055 + result.meta.info.bin_ms / 1000)]
    assert list(data.order_marks[["key", "violation", "n"]].itertuples(index=False, name=None)) == [
        ("k", "out_of_order", 1)]
    assert data.order_changes["label"].tolist() == ["broker-a, broker-b -> broker-b (2 -> 1 queues)"]
    figs = plots.render_all(data, tmp_path)
    assert "order.png" in [f.file for f in figs] and (tmp_path / "order.png").stat().st_size > 10_000
    page = html.render(m, figs, tmp_path, [], [])
    assert "Order per orderly consumer group" in page and "Route changes that moved sharding keys" in page
    assert "Failed ordered sends" in page and "Keys moved to another queue by a route change" in page


@pytest.mark.spark
def test_spark_gives_the_order_section_the_local_engine_gives(spark: Any, tmp_path: Path) -> None:
    """Three hand-made runs in one Spark job (each cut into parts as the engine cuts it): a remap,
    handover duplicates, a real client's queue."""
    from rmqemu.reports.job import compute_many

    runs = [str(write_run(tmp_path / name, lines, scale=scale)) for name, lines, scale in (
        ("remap", remap_run(), 1.0), ("handover", handover_run(), 0.01), ("real", real_client_run(), 1.0))]
    docs = compute_many(spark, runs, only=["order"])
    for run in runs:
        want = document(analyse_dirs([run])[0])["order"]
        assert docs[run]["order"] == want, run
    assert docs[runs[1]]["order"]["by_cause"] == {"remapped": 0, "handover": 3, "redelivery": 0}
    assert docs[runs[2]]["order"]["queues_violated"] == 1
