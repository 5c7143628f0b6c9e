"""The three steps of one run's analysis (reports.core.analysis)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rmqemu.reports.core.analysis import (
    NODE_COLUMNS,
    NODE_KINDS,
    TRUTH_COLUMNS,
    VIEW_QUERIES,
    analyse,
    combine,
    concat,
    node_part,
    run_truth,
)
from rmqemu.reports.core.frame import RunInfo, events, to_frame
from rmqemu.reports.local import read_run
from rmqemu.reports.results import rows
from tests.reports.recorded import unpack
from tests.reports.test_kill import kill_scenario

QUERIES = ("m.clients", "m.namesrvs", "m.faults", "m.misrouted", "m.outcomes", "m.latency", "m.consumption",
           "m.availability", "m.timing", "m.drain")


def _run() -> tuple:
    lines, faults = kill_scenario()
    ev = events(lines + faults)
    return ev, RunInfo.of(ev, 0.01)


def test_asking_for_some_queries_gives_them_the_rows_of_the_whole_analysis() -> None:
    ev, info = _run()
    whole = analyse(ev, info, {}, plots_too=False)
    for wanted in (["m.consumption", "m.outcomes"], ["m.misrouted"], ["m.clients", "m.faults"], list(QUERIES)):
        part = analyse(ev, info, {}, plots_too=False, queries=wanted)
        assert {q for q in part if q.startswith("m.")} == set(wanted)
        for q in wanted:
            assert rows(part[q]) == rows(whole[q]), q
    assert rows(whole["m.clients"]) and rows(whole["m.misrouted"])  # the scenario has both


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its values as text, in sorted row order (parts come in another order)."""
    out = pd.DataFrame({c: df[c].astype(object).map(repr) for c in df.columns})
    return out.sort_values(list(out.columns)).reset_index(drop=True)


def test_parts_of_one_node_each_give_the_tables_of_one_part_of_all_nodes(tmp_path: Path) -> None:
    """The Spark engine cuts a large run by node and gives a small one to a task whole: a real
    run (the recorded chaos quickstart: kills, producers, consumers) must analyse the same."""
    meta, table = read_run(str(unpack("chaos-quickstart", tmp_path)[0]))
    ev, info = to_frame(table), meta.info
    truth = run_truth(ev[list(TRUTH_COLUMNS)], info, meta.manifest.nodes)
    mine = ev.loc[ev["kind"].isin(NODE_KINDS), list(NODE_COLUMNS)]
    by_node = [node_part(g, truth, info) for _, g in mine.groupby("node")]
    assert len(by_node) >= 6
    one, whole = combine(concat(by_node), truth, info), combine(concat([node_part(mine, truth, info)]), truth, info)
    assert set(one) == set(whole)
    for name, df in whole.items():
        assert len(one[name]) == len(df), name
        pd.testing.assert_frame_equal(_sorted(one[name]), _sorted(df), check_dtype=False, obj=name)
    assert len(whole["classified"]) > 100 and len(whole["client_intervals"]) > 0


def test_without_the_staleness_queries_no_view_is_computed() -> None:
    ev, info = _run()
    part = analyse(ev, info, {}, plots_too=False, queries=["m.consumption"])
    assert part["client_views"].empty and not (VIEW_QUERIES & set(part))
    assert "reason" not in part["classified"]  # nor is any send classified
