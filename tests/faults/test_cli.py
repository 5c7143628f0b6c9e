"""The fault verbs' click commands, with the supervisor RPC replaced by a VerbServer on FakeOps:
argument plumbing, output lines, exit codes (2 for bad arguments, 1 for refusals)."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli import supervisor
from rmqemu.emulator.cli.main import main
from rmqemu.errors import ControlError
from rmqemu.faults.supervisor_verbs import VerbServer
from rmqemu.faults.testing import FakeOps


@pytest.fixture
def env(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"scale": 0.01, "nodes": {}}))
    ops = FakeOps()
    server = VerbServer(ops, scale=0.01, seed=1, clock=ops.clock, log=lambda _m: None)
    calls = []

    def fake_call(run_dir: Path, name: str, args=None, timeout_ms: float = 0):
        calls.append((Path(run_dir), name, args))
        try:
            return server.handlers()[name](args or {})
        except Exception as exc:  # noqa: BLE001 - as the supervisor does: any handler error, as its text only
            raise ControlError(str(exc)) from None

    monkeypatch.setattr(supervisor, "call", fake_call)
    return run, ops, calls


def rmqemu(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_pause_resume_and_output(env):
    run, ops, calls = env
    res = rmqemu("pause", "broker-a-0", "--duration", "30s", "--run", str(run))
    assert res.exit_code == 0, res.output
    assert res.output == "i1: pause broker-a-0; heals in 300 ms wall (30 cluster s)\n"
    assert calls[-1] == (run.resolve(), "pause", {"targets": ["broker-a-0"], "duration": "30s"})
    res = rmqemu("resume", "broker-a-0", "--run", str(run))
    assert (res.exit_code, res.output) == (0, "healed: i1\n")
    assert ops.state["broker-a-0"] == "running"


def test_partition_oneway_from_and_skew_negative(env):
    run, ops, _ = env
    res = rmqemu("partition", "namesrv-0", "--from", "broker-a-0", "--oneway", "--run", str(run))
    assert res.exit_code == 0, res.output
    assert "one-way; 1 link(s) blocked: namesrv-0->broker-a-0" in res.output
    res = rmqemu("skew", "namesrv-1", "-130s", "--run", str(run))
    assert res.exit_code == 0, res.output
    assert "bump -1300 ms wall = -130 cluster s" in res.output
    res = rmqemu("link", "pg-1-0", "--to", "broker-a-0", "--delay", "2s", "--jitter", "500ms", "--run", str(run))
    assert res.exit_code == 0 and "delay_ms=20, jitter_ms=5 on 2 link(s)" in res.output
    res = rmqemu("faults", "--run", str(run))
    assert [line.split(":")[0] for line in res.output.splitlines()] == ["i1", "i2", "i3"]
    res = rmqemu("heal", "--run", str(run))
    assert (res.exit_code, res.output) == (0, "healed: i3, i2, i1\n")
    assert ops.links == {}


@pytest.mark.parametrize("args, code, message", [
    (["pause", "broker-a-0", "--duration", "soon"], 2, "error: --duration: expected a duration"),
    (["skew", "namesrv-0", "tomorrow"], 2, "error: skew: expected a duration"),
    (["link", "pg-1-0", "--loss", "lots"], 2, "error: --loss: expected a probability"),
    (["link", "pg-1-0"], 2, "error: link: expected at least one of delay"),
    (["partition", "--mode", "groups", "a"], 2, "error: partition: groups needs --from"),
    (["kill", "nosuch"], 1, "error: kill: unknown target 'nosuch'"),
    (["resume", "namesrv-0"], 1, "error: no active pause fault on namesrv-0"),
    (["heal", "i42"], 1, "error: heal: no active fault i42"),
])
def test_errors_are_one_line_with_the_right_exit_code(env, args, code, message):
    run, _, calls = env
    res = CliRunner().invoke(main, [*args, "--run", str(run)])
    assert res.exit_code == code, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), res.output
    if code == 2:
        assert calls == []  # usage errors never reach the cluster


def test_overlap_is_refused_naming_the_holder(env):
    run, _, _ = env
    assert rmqemu("kill", "broker-a-0", "--run", str(run)).exit_code == 0
    res = CliRunner().invoke(main, ["pause", "broker-a-0", "--run", str(run)])
    assert res.exit_code == 1
    assert "broker-a-0 is held by i1 (kill broker-a-0)" in res.output


def test_no_run_directory_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["pause", "broker-a-0"])
    assert res.exit_code == 2  # bad input (README: exit codes)
    assert "not a run directory" in res.output and len(res.output.strip().splitlines()) == 1
