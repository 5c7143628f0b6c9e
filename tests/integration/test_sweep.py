"""``rmqemu sweep``: a 2 x 2 grid run end to end, then resumed (docs/design.md §9, "Sweeps")."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults.live import run_cli

TOPO = """name: tiny
seed: 1
timing: {scale: 0.01}
namesrvs: 1
brokers: [{name: broker-a}]
topics: [{name: T, brokers: [broker-a], queues: 2}]
producers: [{group: pg, topics: [T], rate: 2}]
consumers: [{group: cg, subscribe: [T]}]
duration: 100s
"""
SWEEP = """sweep: tiny-poll
topology: tiny.yaml
seeds: [1, 2]
vary:
  producers.*.pollNameServerInterval: [5000, 30000]
parallel: 2
"""


def test_a_two_by_two_sweep_runs_every_cell_and_seed_and_a_rerun_skips_them(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(TOPO)
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    first = run_cli("sweep", "sweep.yaml", "--root", "runs", cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    out = Path(first.stdout.strip().splitlines()[-1])
    assert "4 run(s), 2 at once" in first.stderr and "4 run(s) now, 0 complete before" in first.stderr
    runs = sorted(p.name for p in out.iterdir() if (p / "done.json").is_file())
    assert runs == ["c000-s1", "c000-s2", "c001-s1", "c001-s2"]
    for run_id in runs:
        done = json.loads((out / run_id / "done.json").read_text())
        topo = json.loads((out / "topologies" / f"{run_id}.json").read_text())
        assert done["exit_code"] == 0 and topo["seed"] == int(run_id[-1])
        assert topo["producers"][0]["pollNameServerInterval"] == (5000 if run_id.startswith("c000") else 30000)
        assert (out / run_id / "events" / "pg-0.jsonl").read_text().count('"send"') > 0  # it really ran
    (out / "c001-s2" / "done.json").unlink()  # as if that run had been interrupted
    again = run_cli("sweep", "sweep.yaml", "--root", "runs", cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert Path(again.stdout.strip().splitlines()[-1]) == out  # same grid: the same directory
    assert "1 run(s) now, 3 complete before" in again.stderr
    assert (out / "c001-s2" / "done.json").is_file()
