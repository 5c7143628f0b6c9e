"""``rmqemu plan`` prints the plan a launch would run: the same bytes as the run's plan.json."""

from __future__ import annotations

from pathlib import Path

from tests.faults.live import run_cli

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def test_plan_prints_the_plan_json_the_same_launch_writes(tmp_path: Path) -> None:
    args = [str(TOPOLOGIES / "quickstart.yaml"), "--nemesis", "kill,pause,partition", "--interval", "20s",
            "--seed", "5", "--duration", "120s"]
    planned = run_cli("plan", *args, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert '"source": "nemesis"' in planned.stdout and "step(s), seed 5" in planned.stderr
    launched = run_cli("launch", *args, "--run-dir", str(tmp_path / "run"), "--no-progress", cwd=tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert (tmp_path / "run" / "plan.json").read_text() == planned.stdout


def test_plan_refuses_bad_arguments_and_says_when_there_is_nothing_to_plan(tmp_path: Path) -> None:
    bad = run_cli("plan", str(TOPOLOGIES / "quickstart.yaml"), "--nemesis", "bogus", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown nemesis kind(s) bogus" in bad.stderr and "Traceback" not in bad.stderr
    none = run_cli("plan", str(TOPOLOGIES / "quickstart.yaml"), cwd=tmp_path)
    assert none.returncode == 0 and none.stdout == "" and "no faults" in none.stderr
