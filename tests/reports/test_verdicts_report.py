"""Verdicts in ``rmqemu report`` (docs/design.md §9) on a hand-made run with known metrics (the
kill scenario of test_kill: 1 misrouted send, 2 ok of 3 attempts, no node.lag so timing.healthy
is null): the run's own topology's ``expect:``, ``--expect FILE``, ``--junit``, the exit codes
and the banner report.html opens with; and the metric registry against a real metrics.json."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rmqemu import metric_paths
from rmqemu.reports.cli import report_command
from tests.reports.test_cli import kill_run


def invoke(spark: Any, *args: str) -> Any:
    return CliRunner().invoke(report_command, list(args), obj={"spark": spark}, catch_exceptions=False)


def with_topology_expect(run: Path, expect: dict[str, Any]) -> Path:
    """The run as if launched from a topology carrying ``expect`` (the manifest records it)."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.setdefault("topology", {})["expect"] = expect
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def leaf_paths(doc: Any, prefix: str = "") -> set[str]:
    """Every path of a metrics document in the registry's syntax (``name[]`` for a table of rows)."""
    out: set[str] = {prefix} if prefix else set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            out |= leaf_paths(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(doc, list) and doc and all(isinstance(r, dict) for r in doc):
        out = {prefix + "[]"}
        for row in doc:
            for key, value in row.items():
                out |= leaf_paths(value, f"{prefix}[].{key}")
    return out


@pytest.fixture(scope="module")
def unjudged(spark: Any, tmp_path_factory: Any) -> tuple[Path, Any]:
    run = kill_run(tmp_path_factory.mktemp("verdicts") / "run")
    return run, invoke(spark, str(run), "--no-parquet")


@pytest.mark.spark
def test_without_expectations_the_page_says_so_and_the_exit_is_0(unjudged: tuple[Path, Any]) -> None:
    run, result = unjudged
    assert result.exit_code == 0, result.output
    page = (run / "report" / "report.html").read_text()
    assert "No expectations" in page and ">PASS<" not in page and ">FAIL<" not in page
    assert json.loads((run / "report" / "verdicts.json").read_text()) == {
        "verdict": "NONE", "source": None, "expectations": []}
    assert page.index("No expectations") < page.index("Summary")


@pytest.mark.spark
def test_every_metrics_json_path_is_registered_and_every_registered_one_occurs(unjudged: tuple[Path, Any]) -> None:
    run, _ = unjudged
    metrics = json.loads((run / "report" / "metrics.json").read_text())
    got = leaf_paths(metrics)
    registry = metric_paths.all_paths()
    unregistered = sorted(p for p in got if metric_paths.find(p) is None
                          and p + "[]" not in registry)  # an empty list reads as a leaf
    assert unregistered == [], "add them to rmqemu/metric_paths.py and regenerate docs/metrics.md"

    def occurs(path: str) -> bool:
        pattern = metric_paths._pattern(path)
        if any(pattern.fullmatch(p) for p in got):
            return True
        if path.endswith("_cluster_s") and path[:-len("_cluster_s")] + "_ms" in got:
            return True  # the twin of a null duration (timing.lag_p99_ms without node.lag) is left out
        table = path.split("[]")[0]
        return "*" in path or ("[]" in path and (table in got or table + "[]" not in got))  # no rows: no columns
    assert sorted(p for p in registry if not occurs(p)) == [], "registered but not in metrics.json"


def test_the_registry_reasons_are_the_reports() -> None:
    from rmqemu.reports.core.sends import REASONS

    assert metric_paths.REASONS == REASONS


@pytest.mark.spark
def test_the_runs_own_expectations_pass(spark: Any, tmp_path: Path) -> None:
    run = with_topology_expect(kill_run(tmp_path / "run"), {"misrouted.total": {"max": 1}, "sends.ok": 2})
    junit = tmp_path / "junit.xml"
    result = invoke(spark, str(run), "--no-parquet", "--junit", str(junit))
    assert result.exit_code == 0, result.output
    assert "PASS r1: 2 of 2 expectation(s) held (from the run's topology)" in result.output
    page = (run / "report" / "report.html").read_text()
    assert 'class="verdict PASS"' in page and "all 2 expectation(s) held" in page
    assert page.index("verdict PASS") < page.index("Summary")
    assert json.loads((run / "report" / "verdicts.json").read_text())["verdict"] == "PASS"
    from rmqemu.emulator.runs_index import collect  # what `rmqemu runs` lists
    assert [e.verdict for e in collect(tmp_path)] == ["PASS"]
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("2", "0")
    assert [c.get("name") for c in suite.iter("testcase")] == ["misrouted.total", "sends.ok"]


@pytest.mark.spark
def test_a_failed_expectation_exits_1_names_it_and_its_value(spark: Any, tmp_path: Path) -> None:
    run = with_topology_expect(kill_run(tmp_path / "run"), {"sends.ok": 2})  # --expect wins over it
    rules = tmp_path / "rules.yaml"
    rules.write_text("expect:\n  misrouted.total: 0\n  sends.ok: {min: 3}\n  timing.healthy: true\n"
                     "  sends.attempts: 3\n")
    junit = tmp_path / "junit.xml"
    result = invoke(spark, str(run), "--no-parquet", "--expect", str(rules), "--junit", str(junit))
    assert result.exit_code == 1, result.output
    assert "FAIL r1: 1 of 4 expectation(s) held" in result.output
    assert "FAIL misrouted.total = 1, expected = 0 (off by 1)" in result.output
    assert "FAIL sends.ok = 2, expected >= 3 (1 under the min of 3)" in result.output
    assert "FAIL timing.healthy = null, expected = true" in result.output
    page = (run / "report" / "report.html").read_text()
    assert 'class="verdict FAIL"' in page and "3 of 4 expectation(s) failed" in page
    assert "1 under the min of 3" in page and str(rules) in page
    verdicts = json.loads((run / "report" / "verdicts.json").read_text())
    assert verdicts["verdict"] == "FAIL" and verdicts["source"] == str(rules)
    assert verdicts["expectations"][1] == {"path": "sends.ok", "value": 2, "expected": ">= 3", "passed": False,
                                           "miss": "1 under the min of 3"}
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("4", "3")
    failures = {c.get("name"): c.find("failure") for c in suite.iter("testcase")}
    assert failures["sends.attempts"] is None
    assert failures["sends.ok"].get("message") == "FAIL sends.ok = 2, expected >= 3 (1 under the min of 3)"


@pytest.mark.parametrize("text, message", [
    ("expect:\n  misrouted.totl: 0\n", "misrouted.totl: metrics.json has no such path (did you mean misrouted.total?"),
    ("expect:\n  misrouted.total: {mx: 1}\n", "misrouted.total: expected a number"),
    ("name: x\n", "has no expect: mapping"),
    ("expect: [\n", "not YAML"),
])
def test_bad_expectations_exit_2_before_spark(tmp_path: Path, text: str, message: str) -> None:
    run = kill_run(tmp_path / "run")
    rules = tmp_path / "rules.yaml"
    rules.write_text(text)
    result = CliRunner().invoke(report_command, [str(run), "--expect", str(rules)], obj={"spark": None},
                                catch_exceptions=False)  # no session: Spark must not be reached
    assert result.exit_code == 2, result.output
    assert message in result.output and not (run / "report").exists()


def test_compare_takes_no_expectations(tmp_path: Path) -> None:
    result = CliRunner().invoke(report_command, ["--compare", "a", "b", "--junit", str(tmp_path / "j.xml")])
    assert result.exit_code == 2 and "--expect and --junit judge runs being reported" in result.output
