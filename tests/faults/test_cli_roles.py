"""The CLI with role terms: `rmqemu plan` prints them symbolic with their note; `rmqemu kill
leader:<broker>` hits the leader of the moment, or is refused (exit 1) when there is none."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli import supervisor
from rmqemu.emulator.cli.main import main
from rmqemu.errors import ControlError
from rmqemu.faults import launch_glue
from rmqemu.faults.supervisor_verbs import VerbServer
from rmqemu.faults.testing import FakeOps, dledger_nodes

NODES = dledger_nodes({"broker-a": 3})


def rmqemu(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_plan_prints_role_terms_with_their_note(tmp_path, monkeypatch):
    """The topology schema cannot declare a DLedger group yet (another branch), so the node table
    the plan is built on is the fake one; the command, the plan and its JSON are the real ones."""
    monkeypatch.setattr(launch_glue, "node_infos", lambda _topo: NODES)
    topo = tmp_path / "t.yaml"
    topo.write_text("name: t\nbrokers: [{name: broker-a}]\nduration: 60s\nfaults:\n"
                    "  - {at: 5s, kill: leader:broker-a, restart_after: 10s}\n")
    res = CliRunner().invoke(main, ["plan", str(topo)])
    assert res.exit_code == 0, res.output
    start, stop = json.loads(res.stdout)["steps"]
    assert start["targets"] == stop["targets"] == ["leader:broker-a"]
    assert start["note"] == "leader:broker-a: resolved when the step fires, from the DLedger leader then"
    assert stop["note"] == "ends what its start hit"


def test_validate_names_the_field_of_a_bad_group(tmp_path, monkeypatch):
    monkeypatch.setattr(launch_glue, "node_infos", lambda _topo: NODES)
    topo = tmp_path / "t.yaml"
    topo.write_text("name: t\nbrokers: [{name: broker-a}]\nduration: 60s\nfaults:\n"
                    "  - {at: 5s, pause: [namesrv-0, followers:broker-b], duration: 5s}\n")
    res = CliRunner().invoke(main, ["validate", str(topo)])
    assert res.exit_code == 2
    assert ("faults[0].pause: followers:broker-b: broker-b is not a DLedger group (DLedger groups: broker-a)"
            in res.output)


@pytest.fixture
def live(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"scale": 0.01, "nodes": {}}))
    ops = FakeOps(NODES)
    server = VerbServer(ops, scale=0.01, seed=1, clock=ops.clock, log=lambda _m: None)

    def fake_call(run_dir: Path, name: str, args=None, timeout_ms: float = 0):
        try:
            return server.handlers()[name](args or {})
        except Exception as exc:  # noqa: BLE001 - as the supervisor does: any handler error, as its text only
            raise ControlError(str(exc)) from None

    monkeypatch.setattr(supervisor, "call", fake_call)
    return run, ops


def test_kill_the_leader_of_the_moment(live):
    run, ops = live
    ops.leaders["broker-a"] = "broker-a-n2"
    res = rmqemu("kill", "leader:broker-a", "--restart-after", "20s", "--run", str(run))
    assert (res.exit_code, res.output) == (0, "i1: kill broker-a-n2; restarts in 200 ms wall (20 cluster s)\n")
    assert ops.state["broker-a-n2"] == "dead"


def test_no_leader_is_a_refusal(live):
    run, ops = live
    res = CliRunner().invoke(main, ["pause", "followers:broker-a", "--run", str(run)])
    assert res.exit_code == 1
    assert "pause: nothing to hit: followers:broker-a: broker-a has no DLedger leader now" in res.output
    assert ops.calls_of("signal") == []


def test_the_node_table_of_a_topology_keeps_the_dledger_peer_id():
    """What build_plan and validate see: a DLedger group's nodes carry their peer id and are no
    fixed master or slave; a classic group's are what they always were."""
    from rmqemu.emulator.launcher.topology_load import load_topology

    table = launch_glue.node_infos(load_topology(Path(__file__).parents[2] / "topologies" / "dledger-quickstart.yaml"))
    assert [(n, i.peer) for n, i in table.items() if i.broker == "broker-a"] == [
        ("broker-a-n0", "n0"), ("broker-a-n1", "n1"), ("broker-a-n2", "n2")]
    assert not any(table[f"broker-a-n{i}"].is_master or table[f"broker-a-n{i}"].is_slave for i in range(3))
    assert table["broker-b-0"].peer is None and table["broker-b-0"].is_master and table["broker-b-1"].is_slave
