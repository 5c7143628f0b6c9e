"""Run a fault plan: one loop, steps at their times, everything healed at the end.

The interpreter takes its clock and its sleep as arguments (``clock() -> ms``, monotonic;
``sleep(ms)``), so tests drive it with a fake clock and no real time passes, and the launcher can
pass an interruptible wait. It sleeps in chunks of at most ``poll_ms`` and checks
``should_stop()`` between them (end of run, Ctrl-C), and whatever happens — last step done, stop
requested, a step failing, KeyboardInterrupt — it calls ``injector.heal_all()`` before returning,
so no node is left stopped, cut off or skewed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rmqemu.errors import FaultError, PlanFailed
from faults.injector import Injector
from faults.kinds import build_fault
from faults.schedule import Plan, PlanStep


@dataclass
class PlanRun:
    """What happened: steps executed (or skipped, with why), whether it was stopped early."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped_early: bool = False
    healed: list[str] = field(default_factory=list)


def run_step(step: PlanStep, injector: Injector) -> str | None:
    """Execute one step; returns why it was skipped, or None if it ran."""
    if step.action == "start":
        injector.start(build_fault(step.kind, step.fault_id, step.targets, step.params))
        return None
    if injector.get(step.fault_id) is None:
        return f"{step.describe()}: not active any more (healed interactively?)"
    injector.stop(step.fault_id)
    return None


def run_plan(
    plan: Plan,
    injector: Injector,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    should_stop: Callable[[], bool] = lambda: False,
    *,
    poll_ms: float = 100.0,
    wait_until_end: bool = True,
    continue_on_error: bool = False,
    heal_at_end: bool = True,
) -> PlanRun:
    """Run ``plan`` from now: each step at ``start + at_ms``, then (``wait_until_end``) until the
    plan's ``duration_ms``, then heal everything.

    A failing step raises :class:`PlanFailed` (after healing) carrying the plan's seed; with
    ``continue_on_error`` it is recorded as a ``fault.error`` event and the plan goes on.
    ``heal_at_end=False`` is for the one-fault plans of interactive verbs (a ``pause --duration``
    must not heal the other faults of a live cluster when it ends); then only this plan's own
    faults are healed on an early stop or an error.
    """
    result = PlanRun()
    start = clock()

    def wait_until(at_ms: float) -> bool:
        while True:
            if should_stop():
                result.stopped_early = True
                return False
            remaining = start + at_ms - clock()
            if remaining <= 0:
                return True
            sleep(min(remaining, poll_ms))

    try:
        for index, step in enumerate(plan.steps):
            if not wait_until(step.at_ms):
                break
            try:
                skipped = run_step(step, injector)
            except FaultError as err:
                if not continue_on_error:
                    raise PlanFailed(
                        f"fault plan step {index} ({step.source + ': ' if step.source else ''}{step.describe()}) "
                        f"failed: {err} [seed {plan.seed}; replay with: rmqemu launch --replay RUN_DIR]",
                        seed=plan.seed, step={"index": index, "fault_id": step.fault_id}) from err
                injector.ops.record({"kind": "fault.error", "node": "injector", "fault_id": step.fault_id,
                                     "fault": step.kind, "targets": list(step.targets),
                                     "action": step.action, "error": str(err)})
                result.skipped.append(f"{step.describe()}: {err}")
                continue
            if skipped is None:
                result.done.append(step.describe())
            else:
                result.skipped.append(skipped)
        else:
            if wait_until_end and plan.duration_ms is not None:
                wait_until(plan.duration_ms)
    except BaseException as err:  # a failed step, Ctrl-C: heal, but do not hide the cause
        try:
            _heal(plan, injector, heal_at_end)
        except Exception as heal_err:  # noqa: BLE001
            err.add_note(f"and healing failed too: {heal_err}")
        raise
    if heal_at_end or result.stopped_early:
        result.healed = _heal(plan, injector, heal_at_end)
    return result


def _heal(plan: Plan, injector: Injector, everything: bool) -> list[str]:
    if everything:
        return injector.heal_all()
    own = {step.fault_id for step in plan.steps}
    healed: list[str] = []
    failures: list[str] = []
    for fault in reversed(injector.active()):
        if fault.fault_id in own:
            try:  # one fault that fails to heal must not leave the others in place
                injector.stop(fault.fault_id, reason="heal", restart=False)
                healed.append(fault.fault_id)
            except FaultError as err:
                failures.append(f"{fault.describe()}: {err}")
    if failures:
        raise FaultError("healing failed for " + "; ".join(failures))
    return healed
