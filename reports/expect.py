"""Which expectations a report judges a run by, and the JUnit file of the verdicts
(``rmqemu report --expect FILE --junit FILE``, docs/design.md §9).

The rules come from ``--expect FILE`` (any YAML file with an ``expect:`` mapping: a topology,
a sweep file, a file of its own) or else from the run's own topology as its manifest recorded
it. Both are checked against the metric registry before Spark starts, so a misspelt path costs
no analysis (exit 2).
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from rmqemu import metric_paths
from rmqemu.errors import ExpectationError
from rmqemu.verdicts import Expectation, Expectations, Verdict, parse_expect


def known(rules: list[Expectation], source: str) -> list[Expectation]:
    """The rules, once every path is one value metrics.json has (else ExpectationError)."""
    problems = [f"{source}.{r.path}: {why}" for r in rules if (why := metric_paths.problem(r.path))]
    if problems:
        raise ExpectationError("\n".join(problems))
    return rules


def from_file(path: Path) -> Expectations:
    """The ``expect:`` of any YAML file; a file without one is bad input."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExpectationError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ExpectationError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not data.get("expect"):
        raise ExpectationError(f"{path}: has no expect: mapping (metric path: rule, docs/metrics.md)")
    source = f"{path} expect"
    return Expectations(known(parse_expect(data["expect"], source), source), str(path))


def from_run(run_dir: str) -> Expectations | None:
    """The ``expect:`` of the run's topology as its manifest recorded it (None: it had none, or
    the run is not on a local path)."""
    manifest = Path(run_dir.removeprefix("file://")) / "manifest.json"
    if "://" in run_dir and not run_dir.startswith("file://") or not manifest.is_file():
        return None
    try:
        raw = (json.loads(manifest.read_text(encoding="utf-8")).get("topology") or {}).get("expect")
    except (OSError, ValueError, AttributeError):
        return None  # the report's own manifest check names what is wrong with it
    if not raw:
        return None
    source = f"{manifest} topology expect"
    return Expectations(known(parse_expect(raw, source), source), "the run's topology")


def junit(results: list[tuple[str, list[Verdict]]]) -> bytes:
    """A JUnit XML document: one test suite per run, one test case per expectation; a failed
    one carries the value, the bound and the miss in its message (what CI shows)."""
    suites = ET.Element("testsuites", name="rmqemu expectations")
    total = failed = 0
    for run, verdicts in results:
        bad = sum(not v.passed for v in verdicts)
        suite = ET.SubElement(suites, "testsuite", name=run, tests=str(len(verdicts)), failures=str(bad),
                              errors="0", skipped="0")
        for v in verdicts:
            case = ET.SubElement(suite, "testcase", classname=f"rmqemu.{run}", name=v.path)
            if not v.passed:
                ET.SubElement(case, "failure", message=v.line(), type="expectation").text = v.line()
        total, failed = total + len(verdicts), failed + bad
    suites.set("tests", str(total))
    suites.set("failures", str(failed))
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: Path, results: list[tuple[str, list[Verdict]]]) -> None:
    try:
        path.write_bytes(junit(results))
    except OSError as exc:
        raise ExpectationError(f"{path}: cannot write the JUnit file ({exc.strerror or exc})") from None


def verdicts_json(rules: Expectations | None, verdicts: list[Verdict]) -> dict[str, Any]:
    """``report/verdicts.json``: what ``rmqemu runs`` lists as the run's verdict (PASS, FAIL, or
    NONE without expectations) and each expectation's value, so the index needs no judging."""
    return {"verdict": "NONE" if not verdicts else "PASS" if all(v.passed for v in verdicts) else "FAIL",
            "source": rules.source if rules else None,
            "expectations": [{"path": v.path, "value": v.value, "expected": v.expectation.describe(),
                              "passed": v.passed, "miss": v.miss} for v in verdicts]}


def describe(metrics: dict[str, Any]) -> str:
    """The run's name for a JUnit suite: its id."""
    return str(metrics.get("run") or metrics.get("name") or "run")
