"""How ``rmqemu launch`` gets its fault plan and runs it against a live :class:`Launcher`.

The plan comes from, in order of precedence, ``--replay RUN_DIR`` (that run's ``plan.json``),
``--nemesis KINDS`` (a random plan that follows from the seed) or the topology's ``faults:`` list.
It is written to ``plan.json`` before the first step runs. The interpreter runs in the launcher's
thread: its ``sleep`` is the launcher's ``pump_for``, so control messages and node exits are
handled while it waits, and it heals every fault at the end of the run or when interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.emulator.launcher.topology_load import plan_nodes
from rmqemu.errors import FaultError, HostOverloaded, PlanError, PlanFailed, RmqemuError, TopologyError
from rmqemu.faults.injector import Injector
from rmqemu.faults.interpreter import run_plan_steps
from rmqemu.faults.nemesis import random_plan
from rmqemu.faults.schedule import Plan, check_plan, plan_from_specs, read_plan, spec_problems, write_plan

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher
    from rmqemu.emulator.launcher.topology import Topology


def node_infos(topo: "Topology") -> dict[str, NodeInfo]:
    """The injector's view of the topology's nodes, before any is spawned (a DLedger peer with its id)."""
    return {p.name: p.node_info() for p in plan_nodes(topo)}


def build_plan(topo: "Topology", *, nemesis: str | None = None, interval: Any = "30s",
               replay: Path | None = None, concurrency: int = 1) -> Plan:
    """The run's fault plan, checked against the topology's nodes before anything is spawned."""

    nodes = node_infos(topo)
    scale = topo.timing.scale
    try:
        if replay is not None:
            plan = read_plan(replay)
        elif nemesis:
            plan = random_plan(nemesis, interval, topo.duration, nodes, topo.seed, scale, concurrency)
        else:
            plan = plan_from_specs(topo.faults, nodes, topo.seed, scale, topo.duration)
        check_plan(plan, nodes)
    except PlanError as err:  # a nemesis plan depends on the seed: say which one
        raise PlanError(f"{err} [seed {topo.seed}]") from None
    return plan


def topology_fault_problems(topo: "Topology") -> list[str]:
    """The problems of a topology's ``faults:`` list (unknown targets, impossible partitions,
    overlaps), found when the file is loaded so that ``validate`` reports them too."""

    if not topo.faults:
        return []
    nodes = node_infos(topo)
    return spec_problems(topo.faults, nodes, topo.seed, topo.timing.scale, topo.duration)


def check_topology_faults(topo: "Topology", source: str | None = None) -> "Topology":
    """``topo`` if its ``faults:`` list can run on its nodes, else :class:`TopologyError` with
    one line per problem: what ``validate``, ``launch`` and ``up`` check before spawning."""
    problems = topology_fault_problems(topo)
    if problems:
        raise TopologyError(source or topo.name, problems)
    return topo


def drive_plan(cluster: "Launcher", plan: Plan, pump_for: Callable[[float], None],
               elapsed_ms: Callable[[], float], total_ms: float) -> None:
    """Write ``plan.json``, run every step on time, heal everything at the end (or on error).

    Every step runs, even late: effects that wait for the cluster (a restart waits for the new
    process to say ready, about a second of Python start-up) delay the steps after them, and a
    plan cut short by the clock would make a ``--replay`` run different faults than the run it
    replays. So the run lasts until its duration or its last step, whichever comes later; faults
    without an end last until then and are healed with the rest.
    """
    write_plan(plan, cluster.run_dir / "plan.json")
    injector = Injector(cluster)
    replay = f"rmqemu launch --replay {cluster.run_dir}"
    failure: BaseException | None = None
    try:
        try:
            run_plan_steps(plan, injector, clock=elapsed_ms, sleep=pump_for)
        except PlanFailed as err:
            named = PlanFailed(str(err).replace("rmqemu launch --replay RUN_DIR", replay), seed=err.seed, step=err.step)
            for note in getattr(err, "__notes__", ()):  # e.g. healing failed too
                named.add_note(note)
            raise named from err.__cause__
        except HostOverloaded:  # the host, not the plan: said first, as it is (docs/design.md §9, "Overload")
            raise
        except (FaultError, RmqemuError) as err:  # a push that timed out, a restart that failed
            raise PlanFailed(f"fault plan failed: {err} [seed {plan.seed}; replay with: {replay}]",
                             seed=plan.seed) from err
        pump_for(total_ms - elapsed_ms())
    except BaseException as err:
        failure = err
        raise
    finally:
        if injector.active():  # end of run, or interrupted (Ctrl-C): nothing may stay paused or cut off
            try:
                injector.heal_all()
            except FaultError as heal_err:  # never hide the failure (and its seed) that got us here
                if failure is not None:
                    failure.add_note(f"healing afterwards failed too: {heal_err}")
                else:
                    raise PlanFailed(f"{heal_err} [seed {plan.seed}; replay with: {replay}]",
                                     seed=plan.seed) from heal_err
