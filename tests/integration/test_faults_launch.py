"""`rmqemu launch` with faults, as a user runs it (a subprocess): the nemesis plan follows from
the seed (plan.json byte for byte), `--replay` runs the same plan again, and a Ctrl-C in the
middle of a pause and a partition heals both and leaves no process behind."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from rmqemu.emulator.testing import read_events
from tests.eventdoc import contract_problems, kinds_written, unreadable_files
from tests.faults.live import (
    alive,
    kill_survivors,
    manifest_procs,
    rmqemu,
    run_cli,
    stopped,
    wait_until,
)

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
NEMESIS = ["--nemesis", "kill,pause,partition,clock", "--interval", "10s", "--no-progress"]

INTERRUPTED = """
name: faults-interrupted
timing: {scale: 0.05}      # 120 s expiry = 6 s wall: the interrupt comes long before it
namesrvs: 1
brokers:
  - {name: broker-a}
  - {name: broker-b}
faults:
  - {at: 0s, pause: broker-a-0, duration: 100000s}
  - {at: 0s, partition: isolate, targets: [broker-b-0], duration: 100000s}
duration: 200000s
"""


def check_run(run: Path) -> None:
    """Every fault that started ended, and no node of the run is left alive."""
    starts = {e["fault_id"] for e in read_events(run, "fault.start")}
    ends = {e["fault_id"] for e in read_events(run, "fault.end")}
    assert starts and starts == ends, (starts, ends)
    assert not [p for p in manifest_procs(run) if alive(*p)]


def test_same_seed_same_nemesis_plan_other_seed_other_plan_and_replay(tmp_path: Path) -> None:
    topo = str(TOPOLOGIES / "faults-nemesis.yaml")
    runs = {k: tmp_path / k for k in ("a", "b", "c", "replay")}
    argv = {"a": [topo, "--seed", "5", *NEMESIS], "b": [topo, "--seed", "5", *NEMESIS],
            "c": [topo, "--seed", "6", *NEMESIS], "replay": ["--replay", str(runs["a"]), "--no-progress"]}
    try:
        for key, args in argv.items():
            out = run_cli("launch", *args, "--run-dir", str(runs[key]), cwd=tmp_path)
            assert out.returncode == 0, f"{key}: {out.stderr}"
            check_run(runs[key])
        plan = {k: (r / "plan.json").read_bytes() for k, r in runs.items()}
        assert plan["a"] == plan["b"]
        assert plan["a"] != plan["c"]
        assert plan["replay"] == plan["a"]
        steps = json.loads(plan["a"])["steps"]
        assert steps and json.loads(plan["a"])["seed"] == 5

        def started(run: Path) -> list[tuple[str, str, list[str]]]:
            return [(e["fault_id"], e["fault"], e["targets"]) for e in read_events(run, "fault.start")]

        assert started(runs["replay"]) == started(runs["a"])  # the same faults, on the same nodes
        assert contract_problems(runs["a"]) == [], "lines that break the event registry (rmqemu/event_kinds.py)"
        assert unreadable_files(runs["a"]) == [], "lines the report's typed reader refuses as they are"
        assert {"node.start", "node.exit", "fault.start", "fault.end", "run.stop", "send"} <= kinds_written(runs["a"])
    finally:
        for run in runs.values():
            if (run / "manifest.json").exists():
                kill_survivors(manifest_procs(run))


def test_ctrl_c_while_a_pause_and_a_partition_are_active_heals_both(tmp_path: Path) -> None:
    topo = tmp_path / "t.yaml"
    topo.write_text(INTERRUPTED)
    run = tmp_path / "run"
    proc = subprocess.Popen(rmqemu("launch", str(topo), "--run-dir", str(run), "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    procs: list[tuple[int, float]] = []
    try:
        wait_until(lambda: len(read_events(run, "fault.start")) == 2, 60, "both faults to take effect")
        procs = manifest_procs(run)
        nodes = json.loads((run / "manifest.json").read_text())["nodes"]
        paused = (nodes["broker-a-0"]["pid"], nodes["broker-a-0"]["create_time"])
        assert stopped(*paused)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        wait_until(lambda: not any(alive(*p) for p in procs), 60, "every node to exit")
        ends = {e["fault_id"]: e for e in read_events(run, "fault.end")}
        assert set(ends) == {"f1", "f2"} and "scheduled" not in {e["reason"] for e in ends.values()}
        healed = max(e["ts"] for e in ends.values())
        # both brokers reached the namesrv on their way out: resumed, and no longer cut off
        for broker in ("broker-a", "broker-b"):
            assert read_events(run, "ns.broker", node="namesrv-0", where=lambda e, b=broker: e["broker"] == b
                               and e["change"] == "unregister" and e["ts"] > healed), broker
        exits = read_events(run, "node.exit")
        assert sorted(e["node"] for e in exits) == ["broker-a-0", "broker-b-0", "namesrv-0"]
        assert all(e.get("code") == 0 for e in exits), exits  # graceful: none had to be SIGKILLed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_survivors(procs)
