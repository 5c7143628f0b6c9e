"""The interactive verbs against `rmqemu up`, each one a CLI subprocess as a user types it;
effects are read from the nodes' events; `status` names role errors; `down` leaves no process
behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil

from rmqemu.emulator.cli.supervisor import call
from rmqemu.emulator.launcher.run_dir import append_event
from rmqemu.emulator.node.clock import host_ms
from rmqemu.emulator.testing import read_events
from tests.faults.live import alive, kill_survivors, manifest_procs, run_cli, stopped, wait_until

TOPO = """
name: faults-up
timing: {scale: 0.01}
namesrvs: 1
brokers:
  - {name: broker-a}
  - {name: broker-b}
duration: 100000s
"""


class Live:
    """A cluster started with `rmqemu up`, seen from outside: CLI calls, events, manifest."""

    def __init__(self, tmp_path: Path, run: Path) -> None:
        self.cwd, self.run = tmp_path, run
        self.manifest = json.loads((run / "manifest.json").read_text())

    def cli(self, *args: str, code: int = 0) -> str:
        out = run_cli(*args, "--run", str(self.run), cwd=self.cwd)
        assert out.returncode == code, (args, out.stdout, out.stderr)
        return out.stdout if code == 0 else out.stderr

    def addr(self, node: str) -> str:
        return self.manifest["nodes"][node]["addr"]

    def ns(self, broker: str, changes: set[str], after: float) -> list[dict[str, Any]]:
        return read_events(self.run, "ns.broker", node="namesrv-0", where=lambda e: e["change"] in changes
                           and e["broker_addr"] == self.addr(broker) and e["ts"] > after)

    def fault(self, fault_id: str, kind: str = "fault.start") -> dict[str, Any]:
        found = read_events(self.run, kind, where=lambda e: e["fault_id"] == fault_id)
        assert found, f"no {kind} for {fault_id}"
        return found[0]

    def wait_dropped_then_back(self, broker: str, fault_id: str, heal: tuple[str, ...]) -> None:
        """The namesrv drops the broker during the fault; once it is healed, it registers again."""
        since = self.fault(fault_id)["ts"]
        wait_until(lambda: self.ns(broker, {"expired", "channel_destroy"}, since), 60, f"{broker} dropped ({fault_id})")
        self.cli(*heal)
        healed = self.fault(fault_id, "fault.end")["ts"]
        wait_until(lambda: self.ns(broker, {"register"}, healed), 60, f"{broker} registered again after {fault_id}")


def test_fault_verbs_against_up_then_down_leaves_no_process(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TOPO)
    procs: list[tuple[int, float]] = []
    sup: tuple[int, float] | None = None
    try:
        out = run_cli("up", "t.yaml", "--root", "runs", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        run = (tmp_path / "runs" / "latest").resolve()
        sup_pid = json.loads((run / "supervisor.json").read_text())["pid"]
        sup = (sup_pid, psutil.Process(sup_pid).create_time())
        live = Live(tmp_path, run)
        procs = manifest_procs(run)

        # kill with a restart: the dead process's channel closes at once, then it comes back
        assert live.cli("kill", "broker-b-0", "--restart-after", "30s").startswith(
            "i1: kill broker-b-0; restarts in 300 ms")
        killed = live.fault("i1")["ts"]
        exit_ev = read_events(run, "node.exit", node="broker-b-0")
        assert exit_ev and exit_ev[0]["signal"] == 9
        wait_until(lambda: live.ns("broker-b-0", {"channel_destroy"}, 0), 30, "channel_destroy of broker-b-0")
        wait_until(lambda: len(read_events(run, "node.start", node="broker-b-0")) == 2, 60, "broker-b-0 restarted")
        wait_until(lambda: live.ns("broker-b-0", {"register"}, killed), 60, "broker-b-0 registered again")
        procs += manifest_procs(run)  # the restarted incarnation too

        # pause: refused twice, dropped after the scaled 120 s, back after resume
        assert live.cli("pause", "broker-a-0").startswith("i2: pause broker-a-0")
        assert "broker-a-0 is held by i2 (pause broker-a-0)" in live.cli("pause", "broker-a-0", code=1)
        pid = json.loads((run / "manifest.json").read_text())["nodes"]["broker-a-0"]
        assert stopped(pid["pid"], pid["create_time"])
        live.wait_dropped_then_back("broker-a-0", "i2", ("resume", "broker-a-0"))
        assert not stopped(pid["pid"], pid["create_time"])

        # a one-way cut: broker-b-0 cannot reach namesrv-0
        assert "1 link(s) blocked: broker-b-0->namesrv-0" in live.cli("partition", "broker-b-0", "--from", "namesrv-0",
                                                                      "--oneway")
        live.wait_dropped_then_back("broker-b-0", "i4", ("heal", "i4"))

        # every frame broker-a-0 -> namesrv-0 lost
        assert live.cli("link", "broker-a-0", "--to", "namesrv-0", "--loss", "100%", "--oneway").startswith("i5: link")
        live.wait_dropped_then_back("broker-a-0", "i5", ("heal", "i5"))

        # clock: the namesrv jumps 130 cluster s ahead, then every fault is healed at once
        assert "bump +1300 ms wall = +130 cluster s" in live.cli("skew", "namesrv-0", "+130s")
        clock = read_events(run, "node.clock", node="namesrv-0")[-1]
        assert abs(clock["offset_ms"] - 1300.0) < 1.0
        live.cli("pause", "broker-b-0", "--duration", "100000s")
        live.cli("partition", "broker-a-0")

        # errors: one line each, 1 for what the cluster refuses, 2 for bad arguments
        assert live.cli("kill", "nosuch", code=1).startswith("error: kill: unknown target 'nosuch'")
        assert live.cli("pause", "broker-a-0", "--duration", "soon", code=2).startswith("error: --duration:")
        assert live.cli("skew", "namesrv-0", "+1x", code=2).startswith("error: skew:")

        assert live.cli("heal") == "healed: i8, i7, i6\n"
        assert live.cli("faults") == "no active fault\n"
        assert abs(read_events(run, "node.clock", node="namesrv-0")[-1]["offset_ms"]) < 1.0
        for node in live.manifest["nodes"]:
            state = call(run, "state", {"node": node})["_runtime"]
            assert state["transport"]["blocked_links"] == [] and state["clock"]["offset_ms"] == 0.0, node
        assert not any(stopped(*p) for p in manifest_procs(run))

        # status: every node up; a role error (a bug in rmqemu) is named, with where its traceback is
        status = live.cli("status")
        assert status.count(" up ") == 3 and "role errors" not in status, status
        append_event(run / "events" / "broker-b-0.jsonl", {"ts": host_ms(), "node": "broker-b-0", "kind": "node.error",
                                                           "local_ms": host_ms(), "error": "TypeError: \u00fc"})
        assert "role errors, a bug in rmqemu: broker-b-0 (1); tracebacks in " in live.cli("status")

        live.cli("down")
        wait_until(lambda: not any(alive(*p) for p in [*procs, sup]), 60, "every process of the run to exit")
        starts = {e["fault_id"] for e in read_events(run, "fault.start")}
        assert starts == {e["fault_id"] for e in read_events(run, "fault.end")}
    finally:
        kill_survivors(procs + ([sup] if sup else []))
