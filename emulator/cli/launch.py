"""``rmqemu launch``: run a topology to completion, faults and all, and say how it went.

The cluster runs for ``duration`` cluster seconds (``duration * scale`` wall seconds) while a
progress bar moves; the fault plan, when there is one, is run by the faults interpreter with this
module's ``pump`` as its sleep, so control-plane messages and node exits are handled while it
waits. Every fault is healed and every node stopped on the way out, Ctrl-C included.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rmqemu.emulator.launcher.errorwatch import ErrorWatch
from rmqemu.emulator.launcher.lagwatch import LagWatch
from rmqemu.emulator.launcher.launcher import Launcher
from rmqemu.emulator.launcher.topology import Topology
from rmqemu.emulator.node.clock import host_ms


@dataclass
class RunResult:
    run_dir: Path
    died: list[str] = field(default_factory=list)
    seed: int = 0
    role_errors: dict[str, int] = field(default_factory=dict)  # node -> node.error lines (a bug in rmqemu)

    @property
    def ok(self) -> bool:
        return not self.died and not self.role_errors


class Progress:
    """A progress bar over the run's wall duration, on stderr, quiet when not a terminal."""

    def __init__(self, total_ms: float, label: str, enabled: bool) -> None:
        self.total_ms = max(total_ms, 1.0)
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self.last_pct = -1

    def update(self, elapsed_ms: float) -> None:
        if not self.enabled:
            return
        pct = min(100, int(100 * elapsed_ms / self.total_ms))
        if pct != self.last_pct:
            self.last_pct = pct
            bar = "#" * (pct // 4) + "-" * (25 - pct // 4)
            sys.stderr.write(f"\r{self.label} [{bar}] {pct:3d}%")
            sys.stderr.flush()

    def interrupt(self) -> None:
        """End the bar's line so a message printed now gets a line of its own."""
        if self.enabled and self.last_pct >= 0:
            sys.stderr.write("\n")
            self.last_pct = -1  # redrawn on the next update

    def done(self) -> None:
        if self.enabled:
            self.update(self.total_ms)
            sys.stderr.write("\n")


def run_topology(topo: Topology, run_dir: Path | None = None, root: Path = Path("runs"),
                 plan: Any = None, progress: bool = True,
                 log: Callable[[str], None] | None = None) -> RunResult:
    """Start the cluster, run the plan for the topology's duration, stop everything."""
    say = log or (lambda msg: print(msg, file=sys.stderr))
    with Launcher(topo, run_dir=run_dir, root=root, log=say) as cluster:
        result = RunResult(cluster.run_dir, seed=topo.seed)
        total_ms = topo.duration * 1000 * topo.timing.scale
        bar = Progress(total_ms, f"{topo.name} ({topo.duration:g} cluster s)", progress)
        t0 = time.monotonic()
        watch = LagWatch(cluster.run_dir, topo.timing.scale, [p.config for p in cluster.plans.values()],
                         stopped=lambda: cluster.stopped, since_ms=host_ms())
        errors = ErrorWatch(cluster.run_dir)

        def tell(lines: list[str]) -> None:
            for line in lines:
                bar.interrupt()
                say(line)

        def elapsed_ms() -> float:
            return (time.monotonic() - t0) * 1000

        def pump_for(ms: float) -> None:
            end = elapsed_ms() + max(ms, 0.0)
            while True:
                left = end - elapsed_ms()
                cluster.pump(max(0.0, min(left, 50.0)))
                if (warning := watch.poll()) is not None:
                    tell([warning])
                tell(errors.poll())
                bar.update(elapsed_ms())
                if left <= 0:
                    return

        driver = _fault_driver(cluster, plan, pump_for, elapsed_ms, total_ms)
        try:
            if driver is not None:
                driver()
            pump_for(total_ms - elapsed_ms())
        finally:
            bar.done()
            cluster.pump(0)
            result.died = list(cluster.died)
    tell(errors.poll(force=True))  # what the nodes wrote up to their exit
    result.role_errors = dict(errors.counts)
    return result


def _fault_driver(cluster: Launcher, plan: Any, pump_for: Callable[[float], None],
                  elapsed_ms: Callable[[], float], total_ms: float) -> Callable[[], None] | None:
    """The faults interpreter bound to this cluster, or None when the run has no faults."""
    if plan is None:
        return None
    from rmqemu.faults.launch_glue import drive_plan

    return lambda: drive_plan(cluster, plan, pump_for, elapsed_ms, total_ms)
