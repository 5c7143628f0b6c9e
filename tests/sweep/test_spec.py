"""Sweep files and their grids (emulator.sweep.spec), without running anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqemu.emulator.sweep.runner import auto_parallel
from rmqemu.emulator.sweep.spec import apply_vary, load_sweep, parse_sweep
from rmqemu.errors import TopologyError

TOPO = """name: tiny
seed: 1
timing: {scale: 0.01}
namesrvs: 1
brokers: [{name: broker-a}, {name: broker-b}]
topics: [{name: T, brokers: [broker-a, broker-b], queues: 2}]
producers: [{group: pg, topics: [T], rate: 2}, {group: pg2, topics: [T], rate: 1}]
duration: 100s
"""


@pytest.fixture
def topo_dir(tmp_path: Path) -> Path:
    (tmp_path / "tiny.yaml").write_text(TOPO)
    return tmp_path


def test_grid_is_every_combination_times_every_seed(topo_dir: Path) -> None:
    (topo_dir / "s.yaml").write_text("""sweep: poll
topology: tiny.yaml
seeds: {from: 3, count: 2}
vary:
  producers.*.pollNameServerInterval: [5000, 30000]
  timing.scale: [0.01, 0.02, 0.05]
expect: {consumption.lost: 0}
""")
    spec = load_sweep(topo_dir / "s.yaml")
    assert spec.seeds == [3, 4] and len(spec.cells()) == 6 and len(spec.runs()) == 12
    assert spec.cells()[5].values == {"producers.*.pollNameServerInterval": 30000, "timing.scale": 0.05}
    assert [r.run_id for r in spec.runs()[:3]] == ["c000-s3", "c000-s4", "c001-s3"]
    assert spec.expect[0].path == "consumption.lost" and spec.parallel == "auto"


def test_vary_paths_name_list_entries_by_name_group_or_star() -> None:
    data = {"brokers": [{"name": "broker-a"}, {"name": "broker-b"}], "producers": [{"group": "pg"}, {"group": "q"}]}
    out = apply_vary(data, "brokers.broker-b.registerNameServerPeriod", 10000)
    assert out["brokers"] == [{"name": "broker-a"}, {"name": "broker-b", "registerNameServerPeriod": 10000}]
    assert apply_vary(data, "producers.*.rate", 7)["producers"] == [{"group": "pg", "rate": 7},
                                                                     {"group": "q", "rate": 7}]
    assert apply_vary(data, "timing.scale", 0.02)["timing"] == {"scale": 0.02}
    assert data == {"brokers": [{"name": "broker-a"}, {"name": "broker-b"}],
                    "producers": [{"group": "pg"}, {"group": "q"}]}
    with pytest.raises(ValueError, match="brokers.broker-z: no entry named 'broker-z'"):
        apply_vary(data, "brokers.broker-z.x", 1)


def test_every_problem_of_a_sweep_file_is_one_line(topo_dir: Path) -> None:
    with pytest.raises(TopologyError) as err:
        parse_sweep({"sweep": "a/b", "topology": "missing.yaml", "seeds": [1, 1], "vary": {"x": []},
                     "parallel": 0, "expect": {"a": "b"}, "extra": 1}, "s.yaml", topo_dir)
    text = str(err.value)
    for needle in ("extra: unknown key", "sweep: a name", "topology: missing.yaml: no such file",
                   "seeds: each seed once", "vary.x: a non-empty list", "parallel: 'auto' or a number",
                   "expect.a: expected a number"):
        assert needle in text, needle


def test_a_cell_that_makes_an_invalid_topology_is_refused_before_anything_runs(topo_dir: Path) -> None:
    with pytest.raises(TopologyError, match="cell timing.scale=1e-05"):
        parse_sweep({"sweep": "s", "topology": "tiny.yaml", "vary": {"timing.scale": [0.01, 0.00001]}}, "s.yaml",
                    topo_dir)
    with pytest.raises(TopologyError, match="no entry named 'broker-z'"):
        parse_sweep({"sweep": "s", "topology": "tiny.yaml", "vary": {"brokers.broker-z.x": [1]}}, "s.yaml", topo_dir)


def test_a_sweep_of_too_many_runs_is_refused(topo_dir: Path) -> None:
    with pytest.raises(TopologyError, match="more than 1000"):
        parse_sweep({"sweep": "s", "topology": "tiny.yaml", "seeds": {"from": 1, "count": 100},
                     "vary": {"producers.*.rate": list(range(1, 12))}}, "s.yaml", topo_dir)


def test_auto_parallel_follows_nodes_and_scale() -> None:
    assert auto_parallel(4, 0.01, cores=2) == 1  # 4 nodes at 0.01: 0.7 of a core each run
    assert auto_parallel(4, 0.1, cores=2) == 17
    assert auto_parallel(56, 0.01, cores=2) == 1  # never below one


def test_the_sweep_files_in_the_repository_are_valid() -> None:
    files = sorted((Path(__file__).resolve().parents[2] / "sweeps").glob("*.yaml"))
    assert files
    for f in files:
        spec = load_sweep(f)
        assert spec.runs() and spec.expect, f


def test_a_sweep_expectation_on_a_path_metrics_json_lacks_is_refused(topo_dir: Path) -> None:
    with pytest.raises(TopologyError) as err:
        parse_sweep({"sweep": "s", "topology": "tiny.yaml", "expect": {"consumption.lots": 0, "misrouted": 1,
                                                                       "consumption.lost": 0}}, "s.yaml", topo_dir)
    assert err.value.problems == [
        "expect.consumption.lots: metrics.json has no such path (did you mean consumption.lost? docs/metrics.md "
        "lists them)",
        "expect.misrouted: is a group, not one number or true/false (docs/metrics.md lists the paths)"]


def test_a_sweep_without_expect_judges_by_its_topologys_and_an_empty_one_by_none(topo_dir: Path) -> None:
    """As ``rmqemu report`` does: no rules of the sweep's own -> the topology's; ``expect: {}`` -> none."""
    (topo_dir / "tiny.yaml").write_text(TOPO + "expect: {consumption.lost: 0, sends.ok: {min: 5}}\n")
    inherited = parse_sweep({"sweep": "s", "topology": "tiny.yaml"}, "s.yaml", topo_dir)
    assert [e.path for e in inherited.expect] == ["consumption.lost", "sends.ok"]
    assert inherited.expect_from == str(topo_dir / "tiny.yaml")
    assert inherited.to_dict()["expect"] == {"consumption.lost": 0, "sends.ok": {"min": 5}}  # resumes alike
    own = parse_sweep({"sweep": "s", "topology": "tiny.yaml", "expect": {"misrouted.total": {"max": 3}}},
                      "s.yaml", topo_dir)
    assert [e.path for e in own.expect] == ["misrouted.total"] and own.expect_from == "s.yaml"
    assert parse_sweep({"sweep": "s", "topology": "tiny.yaml", "expect": {}}, "s.yaml", topo_dir).expect == []
