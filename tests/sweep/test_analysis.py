"""A sweep's tables, verdicts and page from hand-made metrics (the Spark job is tested end to end
in tests/integration/test_sweep.py)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rmqemu.emulator.sweep.analysis import analyse
from rmqemu.emulator.sweep.runner import RunResult
from rmqemu.emulator.sweep.spec import parse_sweep
from tests.sweep.tiny import TINY_TOPOLOGY as TOPO


def metrics(misrouted: int, lost: int = 0) -> dict[str, Any]:
    return {"staleness": {"clients_total": {"stale_ms": 10.0 * misrouted, "max_converged_ms": 5.0}},
            "misrouted": {"total": misrouted}, "sends": {"failed": 0}, "consumption": {"lost": lost},
            "timing": {"lag_p99_ms": 1.5, "healthy": True},
            "order": {"violations": misrouted // 2, "failed_sends": {"total": misrouted}}}


@pytest.fixture
def spec(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TOPO)
    return parse_sweep({"sweep": "s", "topology": "tiny.yaml", "seeds": [1, 2],
                        "vary": {"producers.*.pollNameServerInterval": [5000, 30000]},
                        "expect": {"misrouted.total": {"max": 10}}}, "s.yaml", tmp_path)


def test_rows_verdicts_tables_and_page(spec, tmp_path: Path) -> None:
    results = [RunResult(r.run_id, tmp_path / r.run_id, 0 if r.run_id != "c001-s2" else 3, False)
               for r in spec.runs()]
    given = {str(tmp_path / "c000-s1"): metrics(2), str(tmp_path / "c000-s2"): metrics(4),
             str(tmp_path / "c001-s1"): metrics(30)}
    asked: list[list[str]] = []

    def compute(_spark: Any, run_dirs: list[str]) -> dict[str, dict[str, Any]]:
        asked.append(run_dirs)
        return {d: given[d] for d in run_dirs}

    a = analyse(None, spec, results, tmp_path / "report", compute)
    assert asked == [[str(tmp_path / r) for r in ("c000-s1", "c000-s2", "c001-s1")]]  # one job, broken run left out
    assert [(r["run_id"], r["verdict"]) for r in a.rows] == [
        ("c000-s1", "PASS"), ("c000-s2", "PASS"), ("c001-s1", "FAIL"), ("c001-s2", "BROKEN")]
    assert "misrouted.total = 30, expected <= 10 (20 over the max of 10)" in a.rows[2]["failed_expectations"]
    with open(tmp_path / "report" / "runs.csv") as f:
        table = list(csv.DictReader(f))
    assert [r["producers.*.pollNameServerInterval"] for r in table] == ["5000", "5000", "30000", "30000"]
    # the order metrics are columns of every run (empty for the broken one)
    assert [(r["order.violations"], r["order.failed_sends.total"]) for r in table] == [
        ("1", "2"), ("2", "4"), ("15", "30"), ("", "")]
    assert pq.read_table(tmp_path / "report" / "runs.parquet").num_rows == 4
    page = (tmp_path / "report" / "sweep.html").read_text()
    assert page.count('class="FAIL"') == 1 and page.count('class="BROKEN"') >= 2  # the run and its cell
    assert "<h1>BROKEN" in page and (tmp_path / "report" / "vary-0.png").stat().st_size > 5000


def test_values_from_user_files_are_escaped_in_the_page(spec, tmp_path: Path) -> None:
    results = [RunResult(r.run_id, tmp_path / r.run_id, 0, False) for r in spec.runs()]
    a = analyse(None, spec, results, tmp_path / "report",
                lambda _s, dirs: {d: metrics(1) | {"timing": {"lag_p99_ms": 1.0, "healthy": True}} for d in dirs})
    page = (a.out_dir / "sweep.html").read_text()
    assert "<h1>PASS" in page
    spec.vary["producers.*.pollNameServerInterval"][0] = "<script>x</script>"  # as if a file had said so
    hostile = analyse(None, spec, results, tmp_path / "report2", lambda _s, dirs: {d: metrics(1) for d in dirs})
    html = (hostile.out_dir / "sweep.html").read_text()
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html
