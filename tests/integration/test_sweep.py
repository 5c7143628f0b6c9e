"""``rmqemu sweep``: a 2 x 2 grid run end to end, then resumed (docs/design.md §9, "Sweeps")."""

from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
from pathlib import Path

import psutil

from rmqemu.emulator.testing import kill_survivors, process_alive, run_processes
from tests.faults.live import rmqemu, run_cli, wait_until

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
# the --master test's: two runs, one per cell, both running at once as Spark tasks
PAIR = SWEEP.replace("seeds: [1, 2]", "seeds: [1]")
# rate 1 sends about 100 messages in the 100 s run, rate 4 about 400: the second cell fails, with
# room for a host that falls behind by half (seen at load average 10: a rate-4 run under 250)
RATES = """sweep: tiny-rate
topology: tiny.yaml
seeds: [1, 2]
vary:
  producers.*.rate: [1, 4]
parallel: 2
expect:
  sends.ok: {max: 180}
  consumption.lost: 0
"""


def test_a_two_by_two_sweep_runs_every_cell_and_seed_and_a_rerun_skips_them_and_judges_all(tmp_path: Path) -> None:
    """Every cell and seed runs; a rerun runs only what has no ``done.json`` and analyses the whole
    sweep in one Spark job, where a cell that fails its ``expect:`` exits 1 and is marked."""
    (tmp_path / "tiny.yaml").write_text(TOPO)
    (tmp_path / "rates.yaml").write_text(RATES)
    first = run_cli("sweep", "rates.yaml", "--root", "runs", "--no-report", cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr  # nothing judged without the report
    out = Path(first.stdout.strip().splitlines()[-1])  # with --no-report: the sweep directory last
    assert "4 run(s), 2 at once" in first.stderr and "4 run(s) now, 0 complete before" in first.stderr
    runs = sorted(p.name for p in out.iterdir() if (p / "done.json").is_file())
    assert runs == ["c000-s1", "c000-s2", "c001-s1", "c001-s2"]
    for run_id in runs:
        done = json.loads((out / run_id / "done.json").read_text())
        topo = json.loads((out / "topologies" / f"{run_id}.json").read_text())
        assert done["exit_code"] == 0 and topo["seed"] == int(run_id[-1])
        assert topo["producers"][0]["rate"] == (1 if run_id.startswith("c000") else 4)
        assert (out / run_id / "events" / "pg-0.jsonl").read_text().count('"send"') > 0  # it really ran
    (out / "c001-s2" / "done.json").unlink()  # as if that run had been interrupted

    again = run_cli("sweep", "rates.yaml", "--root", "runs", cwd=tmp_path, timeout=600)
    assert again.returncode == 1, again.stdout + again.stderr  # the rate-4 cell fails its expect:
    assert "1 run(s) now, 3 complete before" in again.stderr
    assert (out / "c001-s2" / "done.json").is_file()
    page = Path(again.stdout.strip().splitlines()[-1])
    report = page.parent
    assert report.parent == out  # same grid: the same directory
    with open(report / "runs.csv") as f:
        rows = {r["run_id"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == runs
    for run_id, row in rows.items():
        slow = run_id.startswith("c000")
        assert row["verdict"] == ("PASS" if slow else "FAIL"), row
        assert (int(row["sends.ok"]) <= 180) == slow and row["consumption.lost"] == "0"
    assert "FAIL c001-s1: FAIL sends.ok = " in again.stderr
    html = page.read_text()
    assert "<h1>FAIL" in html and html.count('class="FAIL"') == 3  # two runs and their cell
    assert (report / "runs.parquet").is_file() and (report / "vary-0.png").is_file()


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _node_pids(out: Path) -> list[tuple[int, float]]:
    """Every node (pid, create_time) of the sweep's runs that have written a manifest."""
    return [proc for m in sorted(out.glob("c*/manifest.json")) for proc in run_processes(m.parent)]


def test_with_master_local2_each_run_is_a_spark_task_and_an_interrupt_leaves_no_node(tmp_path: Path) -> None:
    """``--master local[2]``: two runs at once as Spark tasks (launched from PySpark workers); a
    SIGTERM stops them with their nodes; the next invocation completes the sweep and analyses
    it on the same session; a third skips every run. (A sweep of two runs: the analysis of
    more is the local test's, and each JVM here competes with the nodes for the host.)"""
    (tmp_path / "tiny.yaml").write_text(TOPO.replace("duration: 100s", "duration: 400s"))  # 4 s wall a run
    (tmp_path / "sweep.yaml").write_text(PAIR)
    seen: list[tuple[int, float]] = []
    first = subprocess.Popen(rmqemu("sweep", "sweep.yaml", "--root", "runs", "--master", "local[2]", "--no-report"),
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def two_runs_up() -> bool:
            outs = list((tmp_path / "runs").glob("tiny-poll-*"))
            if not outs:
                return False
            procs = _node_pids(outs[0])
            if len(procs) < 8 or not all(process_alive(*p) for p in procs):  # 4 nodes a run
                return False
            seen[:] = procs
            return True

        wait_until(two_runs_up, 300, "two runs of the sweep running at once")
        launchers = {psutil.Process(pid).parent() for pid, _ in seen}
        assert len(launchers) == 2  # each launch a child of a PySpark worker:
        assert all("pyspark.daemon" in launcher.parent().cmdline() for launcher in launchers)
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
        kill_survivors(seen)
    assert first.returncode == 128 + signal.SIGTERM, err
    assert "as Spark tasks on local[2]" in err and "2 at once" in err and "SIGTERM: sweep stopped" in err
    wait_until(lambda: not any(process_alive(*p) for p in seen) and not any(map(_running, launchers)),
               60, "the interrupted runs' launches and nodes to exit")

    second = run_cli("sweep", "sweep.yaml", "--root", "runs", "--master", "local[2]", cwd=tmp_path, timeout=900)
    assert second.returncode == 0, second.stderr
    page = Path(second.stdout.strip().splitlines()[-1])
    out = page.parent.parent
    assert page.name == "sweep.html" and page.is_file()
    counts = re.search(r"(\d+) run\(s\) now, (\d+) complete before", second.stderr)
    assert counts, second.stderr
    now, before = int(counts[1]), int(counts[2])
    assert now == 2 and before == 0  # the two that were interrupted ran again
    assert "analysing 2 run(s) in one Spark job (local[2])" in second.stderr
    assert not any(process_alive(*p) for p in _node_pids(out))
    with open(out / "report" / "runs.csv") as f:
        rows = {r["run_id"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == ["c000-s1", "c001-s1"]
    for run_id, row in rows.items():
        assert row["producers.*.pollNameServerInterval"] == ("5000" if run_id.startswith("c000") else "30000")
        assert row["seed"] == run_id[-1] and row["verdict"] == "PASS" and int(row["sends.ok"]) > 0, row
        assert json.loads((out / run_id / "done.json").read_text())["exit_code"] == 0

    third = run_cli("sweep", "sweep.yaml", "--root", "runs", "--master", "local[2]", "--no-report",
                    cwd=tmp_path, timeout=300)
    assert third.returncode == 0, third.stderr
    assert "0 run(s) now, 2 complete before" in third.stderr and Path(third.stdout.strip()) == out
