"""A run's shutdown (docs/design.md §6), as its phases, each a small function of the launcher:

1. the producers stop;
2. the measured run ends (``run.stop``) and, after a normal end, the consumer groups drain
   for at most ``timing.drainTimeout`` (``run.drain``);
3. the consumers, 4. the brokers (they unregister), 5. the namesrvs stop;
6. the reap: SIGKILL for anything left, every ``node.exit`` written, the manifest updated.

Faults are healed before (by the caller, which owns the injector). Interrupts are handled in
one place, :meth:`Shutdown.run`: after a normal end, a first Ctrl-C skips the drain but not the
rest, and is raised again once every node has stopped; a second one (the third signal of
``rmqemu launch``, emulator/cli/interrupts.py) cuts the shutdown short, and the reap's
bookkeeping still runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rmqemu.emulator.launcher import manifest as _manifest
from rmqemu.emulator.launcher.drain import drain as drain_consumers
from rmqemu.emulator.launcher.processes import NodeProcess, kill_all

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher

Phase = Callable[["Launcher", list[NodeProcess], "Shutdown"], None]


class Shutdown:
    """One shutdown's state: ``drain`` (the run ended normally), ``interrupted`` (a first
    interrupt was absorbed, or cut the drain), ``run_ended`` (``run.stop`` is written)."""

    def __init__(self, drain: bool) -> None:
        self.drain = drain
        self.interrupted = False
        self.run_ended = False

    def run(self, phase: Phase, launcher: Launcher, live: list[NodeProcess]) -> None:
        """``phase``, with the interrupt rule: after a normal end, the first KeyboardInterrupt
        is absorbed and the phase it hit runs again (without the drain); any other is raised."""
        while True:
            try:
                phase(launcher, live, self)
                return
            except KeyboardInterrupt:
                if not self.drain or self.interrupted:
                    raise
                self.interrupted = True


def stop_producers(launcher: Launcher, live: list[NodeProcess], _: Shutdown) -> None:
    launcher.stop_role(live, "producer")


def end_run(launcher: Launcher, live: list[NodeProcess], shutdown: Shutdown) -> None:
    """``run.stop`` (once: what follows is the shutdown, not the measured run), then the drain
    after a normal end that no interrupt has cut."""
    if not launcher.started_ms or not live:
        return
    if not shutdown.run_ended:
        shutdown.run_ended = True
        launcher.record({"node": "launcher", "kind": "run.stop"})
    if shutdown.drain and not shutdown.interrupted:
        shutdown.interrupted = drain_consumers(launcher, launcher.topo.timing.drainTimeout).interrupted


def stop_consumers(launcher: Launcher, live: list[NodeProcess], _: Shutdown) -> None:
    launcher.stop_role(live, "consumer")


def stop_proxies(launcher: Launcher, live: list[NodeProcess], _: Shutdown) -> None:
    launcher.stop_role(live, "proxy")  # after the consumers, whose drain reads through them


def stop_brokers(launcher: Launcher, live: list[NodeProcess], _: Shutdown) -> None:
    launcher.stop_role(live, "broker")


def stop_namesrvs(launcher: Launcher, live: list[NodeProcess], _: Shutdown) -> None:
    launcher.stop_role(live, "namesrv")


PHASES: tuple[Phase, ...] = (stop_producers, end_run, stop_consumers, stop_proxies, stop_brokers,
                              stop_namesrvs)


def reap(launcher: Launcher, live: list[NodeProcess]) -> None:
    """SIGKILL for any node still running, and its exit noticed."""
    kill_all(live)
    launcher.pump(0)


def close(launcher: Launcher) -> None:
    """The bookkeeping that runs even when an interrupt cut the shutdown short: a node reaped by
    then gets its ``node.exit`` here, or nobody could write it (no longer our child); one still
    running is left to the caller (emulator.cli.interrupts.finish)."""
    for p in launcher.procs.values():
        launcher.note_exit(p)
        p.close()
    launcher.control.close()
    if launcher.started_ms and not launcher.run_dir_deleted():
        _manifest.write(launcher)


def shut_down(launcher: Launcher, drain: bool = False) -> None:
    """The whole shutdown; ``drain``: the run ended normally (see the module docstring).
    Raises KeyboardInterrupt after the last phase if one was absorbed."""
    live = [p for p in launcher.procs.values() if p.alive()]
    shutdown = Shutdown(drain)
    try:
        for phase in PHASES:
            shutdown.run(phase, launcher, live)
        reap(launcher, live)
    finally:
        close(launcher)
    if shutdown.interrupted:
        raise KeyboardInterrupt
