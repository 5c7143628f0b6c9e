"""``expect:`` in a topology file (docs/design.md §9): checked by ``validate`` against the metric
registry before anything runs, each problem named by its path and line; carried into the
manifest so ``report`` can judge the run later."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.errors import TopologyError

ROOT = Path(__file__).resolve().parents[2]
BASE = "name: t\nbrokers:\n  - {name: broker-a}\n"


def write(tmp_path: Path, expect: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(BASE + "expect:\n" + expect)
    return path


def test_good_expectations_load_and_stay_as_written(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, "  consumption.lost: 0\n  misrouted.total: {max: 50}\n"
                                         "  timing.healthy: true\n  duration_cluster_s: {min: 1, max: 1000}\n"
                                         "  misrouted.by_reason_outcome.dead.timeout: {max: 3}\n"))
    assert topo.expect == {"consumption.lost": 0, "misrouted.total": {"max": 50}, "timing.healthy": True,
                           "duration_cluster_s": {"min": 1, "max": 1000},
                           "misrouted.by_reason_outcome.dead.timeout": {"max": 3}}
    assert topo.model_dump(mode="json")["expect"] == topo.expect  # what the manifest records


def test_no_expect_is_none(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(BASE)
    assert load_topology(path).expect is None


def test_every_bad_path_and_rule_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "  consumption.lost: 0\n  consumption.lots: 0\n  misrouted.total: {max: 5, mn: 3}\n"
                           "  staleness: 1\n  timing.worst_node: 1\n  staleness.clients[].stale_ms: {max: 1}\n"
                           "  sends.ok: {min: 5, max: 1}\n")
    with pytest.raises(TopologyError) as err:
        load_topology(path)
    problems = err.value.problems
    assert any(p.startswith("expect.consumption.lots: metrics.json has no such path (did you mean consumption.lost?")
               and p.endswith("(line 6)") for p in problems), problems
    assert any(p.startswith("expect.misrouted.total: expected a number") and p.endswith("(line 7)")
               for p in problems), problems
    assert any(p.startswith("expect.staleness: is a group") and p.endswith("(line 8)") for p in problems), problems
    assert any(p.startswith("expect.timing.worst_node: is text") and p.endswith("(line 9)") for p in problems)
    assert any(p.startswith("expect.staleness.clients[].stale_ms: is a table's column") for p in problems)
    assert any(p.startswith("expect.sends.ok: min 5 is above max 1") and p.endswith("(line 11)")
               for p in problems), problems
    assert len(problems) == 6, problems


def test_validate_exits_2_and_the_schema_describes_expect(tmp_path: Path) -> None:
    cli = [sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()"]
    out = subprocess.run([*cli, "validate", str(write(tmp_path, "  consumption.lots: 0\n"))],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "expect.consumption.lots: metrics.json has no such path" in out.stderr
    assert "Traceback" not in out.stderr
    schema = json.loads(subprocess.run([*cli, "schema"], capture_output=True, text=True, timeout=120,
                                       check=True).stdout)
    rule = schema["properties"]["expect"]["anyOf"][0]["additionalProperties"]
    assert {"type": "boolean"} in rule["anyOf"]


def test_the_chaos_quickstart_carries_an_expectation() -> None:
    topo = load_topology(ROOT / "topologies" / "chaos-quickstart.yaml")
    assert topo.expect and topo.expect["consumption.lost"] == 0
