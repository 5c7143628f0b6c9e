"""Starting a plan step's fault now: the injector's entry for a step, where role terms are bound.

A step without role terms or group modes is built and started as it is. One with them is bound
first (:func:`faults.binding.bind_step`) against the cluster at this moment: the leader of each
DLedger group it needs (:meth:`faults.ops.ClusterOps.dledger_leader`), the resources the
injector's active faults hold and the nodes earlier faults left down. The fault is built from
the bound step, so ``fault.start`` records the nodes actually hit, and a later heal acts on them
(the injector keeps the fault object).
"""

from __future__ import annotations

from rmqemu.faults.binding import bind_step, groups_asked, needs_binding
from rmqemu.faults.injector import Injector
from rmqemu.faults.kinds import Fault, build_fault
from rmqemu.faults.plan_check import resource_of
from rmqemu.faults.schedule import PlanStep


def start_step(step: PlanStep, injector: Injector) -> Fault | str:
    """Start the fault of a start step; returns it, or why nothing could be hit (then nothing
    was started and nothing recorded: the caller decides, see :func:`faults.interpreter.run_step`)."""
    if not needs_binding(step):
        return injector.start(build_fault(step.kind, step.fault_id, step.targets, step.params))
    nodes = injector.ops.node_infos()
    leaders = {group: injector.ops.dledger_leader(group) for group in groups_asked(step, nodes)}
    resource = resource_of(step)

    def held(node: str) -> str | None:
        """Why the fault cannot take ``node`` now: another holds it, or (a signal) it is down."""
        holder = injector.holder(node, resource) if resource else None
        if holder is not None:
            return f"held by {holder.describe()}"
        if resource == "process" and node in injector.down_nodes():
            return "down: an earlier fault ended it and it was not restarted"
        return None
    bound = bind_step(step, nodes, leaders, held)
    if bound.step is None:
        return bound.why
    fault = build_fault(bound.step.kind, step.fault_id, bound.step.targets, bound.step.params)
    if bound.refused:
        fault.notes["refused"] = dict(bound.refused)  # fault.start's params.refused, with any signal refused
    return injector.start(fault)
