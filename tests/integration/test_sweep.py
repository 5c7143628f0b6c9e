"""``rmqemu sweep``: a 2 x 2 grid run end to end, then resumed (docs/design.md §9, "Sweeps")."""

from __future__ import annotations

import csv
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
# rate 1 sends about 100 messages in the 100 s run, rate 4 about 400: the second cell fails
RATES = """sweep: tiny-rate
topology: tiny.yaml
seeds: [1, 2]
vary:
  producers.*.rate: [1, 4]
parallel: 2
expect:
  sends.ok: {max: 250}
  consumption.lost: 0
"""


def test_a_two_by_two_sweep_runs_every_cell_and_seed_and_a_rerun_skips_them(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(TOPO)
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    first = run_cli("sweep", "sweep.yaml", "--root", "runs", "--no-report", cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    out = Path(first.stdout.strip().splitlines()[-1])  # with --no-report: the sweep directory last
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
    again = run_cli("sweep", "sweep.yaml", "--root", "runs", "--no-report", cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert Path(again.stdout.strip().splitlines()[-1]) == out  # same grid: the same directory
    assert "1 run(s) now, 3 complete before" in again.stderr
    assert (out / "c001-s2" / "done.json").is_file()


def test_one_spark_job_analyses_the_sweep_and_a_failing_cell_exits_1(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(TOPO)
    (tmp_path / "rates.yaml").write_text(RATES)
    proc = run_cli("sweep", "rates.yaml", "--root", "runs", cwd=tmp_path, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    page = Path(proc.stdout.strip().splitlines()[-1])
    report = page.parent
    with open(report / "runs.csv") as f:
        rows = {r["run_id"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == ["c000-s1", "c000-s2", "c001-s1", "c001-s2"]
    for run_id, row in rows.items():
        slow = run_id.startswith("c000")
        assert row["verdict"] == ("PASS" if slow else "FAIL"), row
        assert (int(row["sends.ok"]) <= 250) == slow and row["consumption.lost"] == "0"
    assert "FAIL c001-s1: FAIL sends.ok = " in proc.stderr
    html = page.read_text()
    assert "<h1>FAIL" in html and html.count('class="FAIL"') == 3  # two runs and their cell
    assert (report / "runs.parquet").is_file() and (report / "vary-0.png").is_file()
