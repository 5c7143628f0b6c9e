"""Fault injection for rmqemu (docs/design.md §4): kill, stop, pause, partitions, link faults and
clock skew on plain local processes, seeded, recorded in ``faults.jsonl`` and always healed.

Layers, from pure to effectful:

- :mod:`emulator.launcher.fault_spec` — ``FaultSpec``, one entry of a topology's ``faults:`` list;
- :mod:`faults.targets`, :mod:`faults.partition` — pure, seeded target and partition maths;
- :mod:`faults.schedule`, :mod:`faults.nemesis` — plans as plain data (``plan.json``);
- :mod:`faults.kinds`, :mod:`faults.injector` — fault objects and the injector that merges them;
- :mod:`faults.interpreter` — runs a plan on an injected clock: ``run_plan_steps`` for ``launch``,
  ``run_plan`` (until the plan's end, then heal everything) for tests and scripts;
- :mod:`faults.ops` — ``ClusterOps``, what the launcher implements; :mod:`emulator.launcher.signals` — the
  pidfd / create_time safety the launcher uses to signal only its own processes;
- :mod:`faults.verbs` — argument helpers for the interactive CLI verbs;
  :mod:`faults.supervisor_verbs` — their server side in an ``rmqemu up`` supervisor (one
  injector per cluster); :mod:`emulator.cli.fault_verbs` — the ``rmqemu kill|stop|pause|resume|partition|
  link|skew|heal|faults`` commands;
- :mod:`faults.launch_glue` — the plan of ``rmqemu launch`` (topology, ``--nemesis``, ``--replay``);
- :mod:`faults.testing` — ``FakeOps`` for tests.
"""

from rmqemu.errors import (
    FaultError, OverlappingFault, PartitionError, PlanError, PlanFailed, ProcessGone, SpecError,
    TargetError, UnsafeSignal,
)
from faults.injector import Injector
from faults.interpreter import PlanRun, run_plan, run_plan_steps
from faults.kinds import (
    ClockFault, Fault, KillFault, LinkFault, PartitionFault, PauseFault, RestartFault, StopFault, build_fault,
)
from faults.nemesis import parse_nemesis_kinds, random_plan
from emulator.launcher.nodes import NodeInfo, index_nodes, node_table
from faults.ops import ClusterOps
from faults.partition import PartitionPlan, plan_partition
from faults.schedule import Plan, PlanStep, check_plan, plan_from_specs, read_plan, resolve_spec, write_plan
from emulator.launcher.signals import ProcessRegistry, SpawnedProcess
from emulator.launcher.fault_spec import FAULT_KINDS, FaultSpec, parse_duration
from faults.targets import resolve_targets
from faults.verbs import (
    link_spec, one_fault_plan, parse_partition_args, parse_skew, partition_spec, process_spec, skew_spec,
)

__all__ = [
    # errors
    "FaultError", "TargetError", "PartitionError", "SpecError", "OverlappingFault", "UnsafeSignal",
    "ProcessGone", "PlanError", "PlanFailed",
    # specs, targets, partitions
    "FaultSpec", "FAULT_KINDS", "parse_duration", "NodeInfo", "node_table", "index_nodes",
    "resolve_targets", "plan_partition", "PartitionPlan",
    # plans
    "Plan", "PlanStep", "plan_from_specs", "resolve_spec", "check_plan", "write_plan", "read_plan",
    "random_plan", "parse_nemesis_kinds", "run_plan", "run_plan_steps", "PlanRun",
    # effects
    "ClusterOps", "Injector", "Fault", "KillFault", "StopFault", "RestartFault", "PauseFault",
    "PartitionFault", "LinkFault", "ClockFault", "build_fault", "SpawnedProcess", "ProcessRegistry",
    # interactive verbs
    "parse_skew", "skew_spec", "partition_spec", "parse_partition_args", "link_spec", "process_spec",
    "one_fault_plan",
]
