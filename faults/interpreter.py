"""Run a fault plan: one loop, steps at their times, faults healed when the plan is cut short.

The interpreter takes its clock and its sleep as arguments (``clock() -> ms``, monotonic;
``sleep(ms)``), so tests drive it with a fake clock and no real time passes, and the launcher can
pass an interruptible wait. It sleeps in chunks of at most ``poll_ms`` and checks
``should_stop()`` between them, and whatever cuts the plan short — stop requested, a step
failing, KeyboardInterrupt — it heals before returning or raising, so no node is left stopped,
cut off or skewed by it.

Two entry points, one loop (:func:`_interpret`) underneath, because the two kinds of caller want
opposite things at the end and neither should have to spell that out in flags:

- :func:`run_plan_steps` is what ``rmqemu launch`` runs (``faults.launch_glue.drive_plan``): the
  steps only; the launcher owns the end of the run and heals everything itself.
- :func:`run_plan` runs a plan on its own, start to finish (tests on a fake clock, scripts): the
  steps, then until the plan's ``duration_ms``, then every active fault healed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rmqemu.errors import FaultError, PlanFailed
from rmqemu.faults.firing import start_step
from rmqemu.faults.injector import Injector
from rmqemu.faults.schedule import Plan, PlanStep


@dataclass
class PlanRun:
    """What happened: steps executed (or skipped, with why), whether it was stopped early."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped_early: bool = False
    healed: list[str] = field(default_factory=list)


def run_step(step: PlanStep, injector: Injector) -> str | None:
    """Execute one step; returns why it was skipped, or None if it ran.

    A start whose role terms find nothing to hit when it fires (no DLedger leader now, or only
    peers another fault holds: :mod:`faults.binding`) is skipped and recorded as ``fault.error``,
    whatever ``continue_on_error`` says: the cluster's state at that moment decided it, not a
    defect of the plan, so the run goes on (its stop step is skipped in turn)."""
    if step.action == "start":
        started = start_step(step, injector)
        if isinstance(started, str):
            record_error(injector, step, f"skipped when it fired: {started}")
            return f"{step.describe()}: skipped when it fired: {started}"
        return None
    if injector.get(step.fault_id) is None:
        return f"{step.describe()}: not active any more (skipped when it fired, or healed interactively?)"
    injector.stop(step.fault_id)
    return None


def record_error(injector: Injector, step: PlanStep, error: str) -> None:
    """A ``fault.error`` line: the step did not take effect, and why."""
    injector.ops.record({"kind": "fault.error", "node": "injector", "fault_id": step.fault_id,
                         "fault": step.kind, "targets": list(step.targets), "action": step.action, "error": error})


#: Longest single sleep between two ``should_stop()`` checks (wall ms).
POLL_MS = 100.0


def _never() -> bool:
    return False


def run_plan_steps(
    plan: Plan,
    injector: Injector,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    should_stop: Callable[[], bool] = _never,
) -> PlanRun:
    """Run each step of ``plan`` at ``start + at_ms`` and return right after the last one, with
    the faults the steps left active still active: what ``rmqemu launch`` does.

    Why it neither waits for the plan's ``duration_ms`` nor heals at the end: the launcher owns
    the end of the run (it keeps its cluster pumping until the run's duration, then heals
    everything, also what was started by other means), and a fault without an end lasts until
    then. Only when the plan is cut short — a failing step (:class:`PlanFailed`, with the seed),
    an exception such as KeyboardInterrupt, or ``should_stop()`` — are the faults *of this plan*
    healed here, before returning or raising; others on the cluster are left alone.
    """
    return _interpret(plan, injector, clock, sleep, should_stop, poll_ms=POLL_MS,
                      wait_until_end=False, continue_on_error=False, heal_everything=False)


def run_plan(
    plan: Plan,
    injector: Injector,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    should_stop: Callable[[], bool] = _never,
    *,
    poll_ms: float = POLL_MS,
    continue_on_error: bool = False,
) -> PlanRun:
    """Run ``plan`` on its own, from now: each step at ``start + at_ms``, then until the plan's
    ``duration_ms``, then heal every active fault (:meth:`Injector.heal_all`), also when stopped
    early (``should_stop()``), on a failing step or on an exception.

    For tests and standalone use, where nothing else will clean up after the plan. A failing
    step raises :class:`PlanFailed` (after healing) carrying the plan's seed; with
    ``continue_on_error`` it is recorded as a ``fault.error`` event and the plan goes on.
    ``poll_ms`` bounds each sleep, i.e. how late a ``should_stop()`` is noticed.
    """
    return _interpret(plan, injector, clock, sleep, should_stop, poll_ms=poll_ms,
                      wait_until_end=True, continue_on_error=continue_on_error, heal_everything=True)


def _interpret(
    plan: Plan,
    injector: Injector,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    should_stop: Callable[[], bool],
    *,
    poll_ms: float,
    wait_until_end: bool,
    continue_on_error: bool,
    heal_everything: bool,
) -> PlanRun:
    """The loop both entry points share. ``heal_everything``: heal all active faults at the end
    and when cut short; else only this plan's own, and only when cut short."""
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
                record_error(injector, step, str(err))
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
            _heal(plan, injector, heal_everything)
        except Exception as heal_err:  # noqa: BLE001 - the step's error is what is raised; this is a note on it
            err.add_note(f"and healing failed too: {heal_err}")
        raise
    if heal_everything or result.stopped_early:
        result.healed = _heal(plan, injector, heal_everything)
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
