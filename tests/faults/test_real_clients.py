"""Real clients (``client@<pid>``) as partition and link targets, without processes: which names
are accepted and refused (with what message), which link rules a fault on a client makes, that
they reach the injector's table, faults.jsonl and ``rmqemu faults``, and that heal clears them."""

from __future__ import annotations

import random
from typing import Any

import pytest
from click.testing import CliRunner

from rmqemu.emulator.cli import supervisor
from rmqemu.emulator.cli.main import main
from rmqemu.emulator.launcher.fault_spec import FaultSpec
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import ControlError, FaultError, PartitionError, PlanError, SpecError, TargetError
from rmqemu.faults.clients import (
    ConnectedClients,
    check_connected,
    client_names,
    is_client,
    link_fault_links,
    partition_links,
    split_terms,
)
from rmqemu.faults.nemesis import random_plan
from rmqemu.faults.schedule import Plan, PlanStep, check_plan, spec_problems
from rmqemu.faults.supervisor_verbs import VerbServer
from rmqemu.faults.testing import FakeOps, sample_nodes
from rmqemu.faults.verbs import link_spec, one_fault_plan, partition_spec, spec_from_args

NODES = sample_nodes()  # namesrv-0/1, broker-a-0/1, broker-b-0, pg-1-0, cg-1-0, cg-1-1
SERVERS = ["namesrv-0", "namesrv-1", "broker-a-0", "broker-a-1", "broker-b-0"]
C = "client@4242"
CLIENTS = ConnectedClients({"namesrv-0": [C], "broker-a-0": [C, "client@10.0.0.9"], "namesrv-1": []})
BLOCK = LinkRule(blocked=True)
NOT_A_PROCESS = "is a real client, not a process rmqemu runs; only partition and link apply to it"


def plan_of(spec: FaultSpec, clients: ConnectedClients | None = CLIENTS) -> PlanStep:
    return one_fault_plan(spec, "i1", NODES, random.Random(1), 0.01, clients=clients).steps[0]


def links(step: PlanStep) -> list[tuple[str, str]]:
    return [tuple(link) for link in step.params["links"]]  # type: ignore[misc]



def test_client_names_and_terms():
    assert is_client(C) and is_client("!client@1") and not is_client("namesrv-0")
    assert client_names([C, "namesrv-0"], "client@1,client@4242", None) == [C, "client@1"]
    assert split_terms([C, "namesrv-0", "!client@1"]) == (["namesrv-0"], [C])
    assert split_terms([C, "!namesrv-0"]) == ([], [C])  # not "every node but namesrv-0, and the client"
    assert CLIENTS.names == ["client@10.0.0.9", C]


@pytest.mark.parametrize("clients, message", [
    (ConnectedClients({}, remoting=False),
     "unknown real client client@1: this cluster has no remoting port (the topology's remoting: is off), "
     "so no real client can connect"),
    (ConnectedClients({"namesrv-0": [], "broker-a-0": None}),
     "real client client@1 not connected: no real client is connected to any namesrv, broker or proxy now; "
     "broker-a-0 did not answer"),
    (CLIENTS, "real client client@1 not connected to any namesrv, broker or proxy; connected real clients: "
              "client@10.0.0.9, client@4242 (rmqemu status lists them)"),
])
def test_an_unconnected_client_is_refused_naming_what_is_connected(clients, message):
    with pytest.raises(TargetError) as err:
        check_connected(["client@1"], clients)
    assert str(err.value) == message
    check_connected([C], CLIENTS)  # connected: fine


def test_a_plan_built_before_the_run_cannot_name_a_client():
    with pytest.raises(TargetError, match="a fault plan is built before any real client connects"):
        check_connected([C], None)
    specs = [FaultSpec.model_validate({"at": 1, "partition": "isolate", "targets": [C], "duration": 5})]
    problems = spec_problems(specs, NODES, seed=1, scale=1.0)
    assert len(problems) == 1 and "real client client@4242: a fault plan is built before" in problems[0]


@pytest.mark.parametrize("verb, args", [
    ("kill", {"targets": [C]}), ("stop", {"targets": ["namesrv-0", C]}), ("pause", {"targets": [C]}),
    ("skew", {"targets": [C], "value": "+130s"}),
])
def test_process_and_clock_faults_refuse_a_client(verb, args):
    with pytest.raises(SpecError) as err:
        spec_from_args(verb, args)
    assert str(err.value) == f"{verb}: {C} {NOT_A_PROCESS}"


def test_a_topology_kill_of_a_client_is_refused_the_same_way():
    specs = [FaultSpec.model_validate({"at": 1, "kill": C})]
    assert "kill: client@4242 is a real client, not a process rmqemu runs" in spec_problems(specs, NODES, 1, 1.0)[0]



def test_partition_from_a_node_cuts_both_directions_at_that_node():
    step = plan_of(partition_spec([C], from_=["namesrv-0"]))
    assert step.kind == "partition" and step.targets == ("namesrv-0", C)
    assert links(step) == [(C, "namesrv-0"), ("namesrv-0", C)]
    assert step.params["groups"] == [[C], ["namesrv-0"]]


def test_oneway_the_first_group_cannot_reach_the_second():
    # the client's requests are dropped by namesrv-0 (receive side) ...
    assert links(plan_of(partition_spec([C], from_=["namesrv-0"], oneway=True))) == [(C, "namesrv-0")]
    # ... or namesrv-0's answers to it are dropped (send side)
    assert links(plan_of(partition_spec(["namesrv-0"], from_=[C], oneway=True))) == [("namesrv-0", C)]


def test_isolating_a_client_cuts_it_from_every_namesrv_and_broker_only():
    step = plan_of(partition_spec([C]))
    assert step.targets == (C,)
    assert step.params["groups"] == [[C], SERVERS]
    assert sorted(links(step)) == sorted([(C, s) for s in SERVERS] + [(s, C) for s in SERVERS])


def test_isolating_a_client_with_a_node_keeps_the_nodes_own_isolation():
    step = plan_of(partition_spec(["namesrv-0", C]))
    assert step.targets == ("namesrv-0", C)
    got = set(links(step))
    assert {("namesrv-0", "pg-1-0"), ("cg-1-0", "namesrv-0")} <= got  # the node is cut from everyone
    assert (C, "namesrv-1") in got and (C, "pg-1-0") not in got and (C, "namesrv-0") not in got


def test_a_client_with_a_role_and_a_remote_client():
    step = plan_of(partition_spec([C, "client@10.0.0.9"], from_=["namesrv"]))
    assert step.targets == ("namesrv-0", "namesrv-1", C, "client@10.0.0.9")
    assert len(links(step)) == 8


@pytest.mark.parametrize("targets, other", [([C], ["client@10.0.0.9"]), ([C], ["pg-1-0"])])
def test_a_partition_that_no_node_carries_is_refused(targets, other):
    with pytest.raises(PlanError, match="a real client only talks to namesrv, broker and proxy nodes"):
        plan_of(partition_spec(targets, from_=other))


def test_an_unconnected_client_is_refused_by_the_plan():
    with pytest.raises(PlanError, match="client@77 not connected to any namesrv, broker or proxy; connected"):
        plan_of(partition_spec(["client@77"], from_=["namesrv-0"]))


def test_partition_links_leave_out_what_no_node_carries():
    assert partition_links([(C, "pg-1-0"), (C, "namesrv-0"), ("pg-1-0", "namesrv-0")], NODES) == [
        (C, "namesrv-0"), ("pg-1-0", "namesrv-0")]
    with pytest.raises(PartitionError):
        partition_links([(C, "client@1")], NODES)



def test_a_link_fault_on_a_client_shapes_both_ways_at_the_nodes():
    step = plan_of(link_spec([C], delay="1s"))
    assert step.targets == (C,) and step.params["delay_ms"] == 10.0
    assert links(step) == sorted([(s, C) for s in SERVERS] + [(C, s) for s in SERVERS])
    step = plan_of(link_spec(["namesrv-0"], to=[C], delay="1s", oneway=True))
    assert links(step) == [("namesrv-0", C)]
    assert links(plan_of(link_spec(["namesrv-0"], to=[C], loss="5%"))) == [(C, "namesrv-0"), ("namesrv-0", C)]


def test_a_link_fault_on_what_a_client_sends_is_shaped_on_arrival():
    """The node it reaches applies it (the transport shapes a real client's frames as they arrive)."""
    assert links(plan_of(link_spec([C], to=["namesrv-0"], delay="1s", oneway=True))) == [(C, "namesrv-0")]
    with pytest.raises(SpecError, match="no link left to shape"):
        link_fault_links([(C, "pg-1-0")], NODES)


def test_a_link_fault_without_a_client_is_unchanged():
    step = plan_of(link_spec(["pg-1-0"], to=["broker-a-0"], delay="1s"), clients=None)
    assert links(step) == [("broker-a-0", "pg-1-0"), ("pg-1-0", "broker-a-0")]



def test_check_plan_accepts_clients_in_partitions_only():
    part = PlanStep(0, "start", "i1", "partition", (C,), {"links": [[C, "namesrv-0"]]})
    check_plan(Plan(1, 1.0, (part,)), NODES)
    kill = PlanStep(0, "start", "i2", "kill", (C,), {})
    with pytest.raises(PlanError, match="unknown node"):
        check_plan(Plan(1, 1.0, (kill,)), NODES)


def test_the_nemesis_never_picks_a_client():
    plan = random_plan("partition,link", "10s", 600, NODES, seed=3, scale=1.0)
    named = [n for s in plan.steps for n in [*s.targets, *(x for link in s.params.get("links", []) for x in link)]]
    assert named and not any(is_client(n) for n in named)



@pytest.fixture
def ops() -> FakeOps:
    return FakeOps(ack_ms=1.0, clients={"namesrv-0": [C], "broker-a-0": [C]})


@pytest.fixture
def srv(ops: FakeOps) -> VerbServer:
    return VerbServer(ops, scale=0.01, seed=7, clock=ops.clock, log=lambda _m: None)


def test_partition_and_heal_a_client_through_the_injector(ops, srv):
    out = srv.start("partition", {"targets": [C], "from": ["namesrv-0"]})
    assert out["targets"] == ["namesrv-0", C] and out["active"]
    assert ops.links == {(C, "namesrv-0"): BLOCK, ("namesrv-0", C): BLOCK}
    assert not ops.calls_of("set_clock")  # a client has no clock of ours
    start = [e for e in ops.events if e["kind"] == "fault.start"][-1]
    assert start["targets"] == ["namesrv-0", C] and start["params"]["links"] == [[C, "namesrv-0"], ["namesrv-0", C]]
    listed = srv.list_faults({})["active"]
    assert [(f["fault_id"], f["targets"]) for f in listed] == [("i1", ["namesrv-0", C])]
    link = srv.start("link", {"targets": [C], "delay": "2s", "duration": "10s"})
    assert ops.links[("broker-a-0", C)] == LinkRule(delay_ms=20.0)
    assert ops.links[("namesrv-0", C)] == LinkRule(blocked=True, delay_ms=20.0)  # merged with the cut
    assert link["ends_in_ms"] == pytest.approx(100.0)
    assert srv.heal({}) == {"healed": ["i2", "i1"]}
    assert ops.links == {}
    ends = [e for e in ops.events if e["kind"] == "fault.end"]
    assert [(e["fault_id"], e["targets"]) for e in ends] == [("i2", [C]), ("i1", ["namesrv-0", C])]


def test_the_verb_server_asks_for_clients_only_when_one_is_named(ops, srv):
    srv.start("partition", {"targets": ["namesrv-0"], "from": ["broker-a-0"]})
    assert not ops.calls_of("real_clients")
    assert srv.real_clients({}) == {"remoting": True, "by_node": {"namesrv-0": [C], "broker-a-0": [C]}, "names": [C]}


@pytest.mark.parametrize("clients, message", [
    ({"namesrv-0": [C]}, "partition: real client client@1 not connected to any namesrv, broker or proxy; "
                         "connected real clients: client@4242"),
    ({"namesrv-0": []}, "partition: real client client@1 not connected: no real client is connected"),
    (None, "partition: unknown real client client@1: this cluster has no remoting port"),
])
def test_the_verb_server_refuses_an_unknown_client(clients, message):
    ops = FakeOps(clients=clients)
    srv = VerbServer(ops, scale=0.01, seed=7, clock=ops.clock, log=lambda _m: None)
    with pytest.raises(FaultError) as err:
        srv.start("partition", {"targets": ["client@1"], "from": ["namesrv-0"]})
    assert str(err.value).startswith(message)
    assert ops.links == {} and not ops.events


def test_resume_and_kill_of_a_client_are_refused(srv):
    for verb in ("resume", "kill"):
        with pytest.raises(SpecError, match=f"{verb}: {C} is a real client, not a process rmqemu runs"):
            srv.handlers()[verb]({"targets": [C]})



@pytest.fixture
def cli(tmp_path, monkeypatch, ops, srv):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text('{"scale": 0.01, "nodes": {}}')
    calls: list[tuple[str, Any]] = []

    def fake_call(run_dir, name, args=None, timeout_ms: float = 0):
        calls.append((name, args))
        try:
            return srv.handlers()[name](args or {})
        except Exception as exc:  # noqa: BLE001 - as the supervisor does
            raise ControlError(str(exc)) from None

    monkeypatch.setattr(supervisor, "call", fake_call)

    def invoke(*args: str):
        return CliRunner().invoke(main, [*args, "--run", str(run)], catch_exceptions=False)
    return invoke, calls


def test_cli_partition_of_a_client_and_the_faults_listing(cli, ops):
    invoke, calls = cli
    res = invoke("partition", C, "--from", "namesrv-0")
    assert res.exit_code == 0, res.output
    assert res.output == (f"i1: partition namesrv-0,{C} (groups; 2 link(s) blocked: "
                          f"{C}->namesrv-0, namesrv-0->{C})\n")
    assert [c[0] for c in calls] == ["real_clients", "partition"]
    res = invoke("faults")
    assert res.output.startswith(f"i1: partition namesrv-0,{C} (groups;")
    res = invoke("link", C, "--delay", "1s")
    assert res.exit_code == 0 and f"i2: link {C} (delay_ms=10 on 10 link(s))" in res.output  # both ways, 5 nodes
    assert invoke("heal").output == "healed: i2, i1\n" and ops.links == {}


@pytest.mark.parametrize("args, message", [
    (["partition", "client@999", "--from", "namesrv-0"],
     "error: partition: real client client@999 not connected to any namesrv, broker or proxy; connected real clients: "
     "client@4242 (rmqemu status lists them)\n"),
    (["link", "namesrv-0", "--to", "client@999", "--delay", "1s"],
     "error: link: real client client@999 not connected to any namesrv, broker or proxy"),
    (["kill", C], f"error: kill: {C} {NOT_A_PROCESS}\n"),
    (["resume", C], f"error: resume: {C} is a real client, not a process rmqemu runs"),
    (["skew", C, "+130s"], f"error: skew: {C} is a real client"),
])
def test_cli_refuses_unknown_clients_and_process_faults_with_exit_2(cli, ops, args, message):
    invoke, calls = cli
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert res.output.startswith(message)
    assert [c[0] for c in calls] in ([], ["real_clients"])  # nothing was started
    assert not ops.events
