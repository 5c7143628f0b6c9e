"""Fault objects, one class per kind, each with ``start(ops, now)`` / ``stop(ops, now)``.

A fault does its *process* effects itself (signals, restarts). Its *network* and *clock* effects
are declared, not pushed: ``link_rules()`` and ``clock_settings()`` say what the fault contributes
while it is active, and the :class:`faults.injector.Injector` merges the contributions of all
active faults and pushes the full result (two partitions on one link add up, a healed fault must
not clear another fault's rules). ``params()`` is the JSON ``params`` of ``fault.start`` and also
the resolved params a plan step carries, so ``build_fault(step) -> start -> params()`` round-trips.
"""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import FaultError, PlanError, ProcessGone
from rmqemu.faults.ops import ClusterOps

Link = tuple[str, str]


@dataclass
class Fault:
    """Base: an id, the nodes it affects, and the resource it holds on them (if any).

    ``holds`` names what two faults may not share on one node: ``"process"`` (kill, stop, pause:
    one cannot pause a dead node or kill a paused one and resume it later) and ``"clock"`` (one
    setting per node). Link rules merge, so partitions and link faults hold nothing.
    """

    fault_id: str
    targets: tuple[str, ...]
    kind: ClassVar[str] = "fault"
    holds: ClassVar[str | None] = None
    started_ms: float | None = field(default=None, init=False)
    notes: dict[str, Any] = field(default_factory=dict, init=False)  # e.g. refused targets

    def start(self, ops: ClusterOps, now: float) -> None:
        self.started_ms = now

    def stop(self, ops: ClusterOps, now: float) -> None:
        """Undo the fault's own effects (the injector re-pushes links and clocks)."""

    def params(self) -> dict[str, Any]:
        return {}

    def link_rules(self) -> dict[Link, LinkRule]:
        return {}

    def clock_settings(self) -> dict[str, ClockSetting]:
        return {}

    def down_nodes(self) -> set[str]:
        """Nodes that cannot ack control commands while this fault is active."""
        return set()

    def describe(self) -> str:
        return f"{self.fault_id} ({self.kind} {','.join(self.targets)})"


def _signal_each(fault: Fault, ops: ClusterOps, sig: int, on_done: Any = None) -> tuple[str, ...]:
    """Signal every target; keep going past refusals, raise only if none could be signalled."""
    done: list[str] = []
    refused: dict[str, str] = {}
    first: FaultError | None = None
    for node in fault.targets:
        try:
            ops.signal(node, sig)
        except FaultError as err:
            refused[node] = str(err)
            first = first or err
            continue
        done.append(node)
        if on_done is not None:
            on_done(node)
    if not done and first is not None:
        raise first
    if refused:  # beside what the binding of a role term refused (faults.binding), if any
        fault.notes["refused"] = {**fault.notes.get("refused", {}), **refused}
    return tuple(done)


@dataclass
class ProcessExitFault(Fault):
    """A signal that ends the process; ``restart_after_ms`` means stop() restarts it."""

    restart_after_ms: float | None = None
    holds: ClassVar[str | None] = "process"
    sig: ClassVar[int] = _signal.SIGKILL

    @property
    def restarts(self) -> bool:
        return self.restart_after_ms is not None

    def start(self, ops: ClusterOps, now: float) -> None:
        super().start(ops, now)
        self.targets = _signal_each(self, ops, self.sig, self._exited(ops))

    def _exited(self, ops: ClusterOps) -> Any:
        return None

    def stop(self, ops: ClusterOps, now: float) -> None:
        if self.restarts:
            for node in self.targets:
                ops.restart(node)

    def params(self) -> dict[str, Any]:
        return {"signal": int(self.sig), "restart_after_ms": self.restart_after_ms}

    def down_nodes(self) -> set[str]:
        return set(self.targets)


@dataclass
class KillFault(ProcessExitFault):
    """SIGKILL: no goodbye; the injector writes ``node.exit signal: 9`` as the kill takes effect."""

    kind: ClassVar[str] = "kill"
    sig: ClassVar[int] = _signal.SIGKILL

    def _exited(self, ops: ClusterOps) -> Any:
        return lambda node: ops.node_exited(node, int(_signal.SIGKILL))


@dataclass
class StopFault(ProcessExitFault):
    """SIGTERM: graceful shutdown (a broker unregisters); the node logs its own exit."""

    kind: ClassVar[str] = "stop"
    sig: ClassVar[int] = _signal.SIGTERM


@dataclass
class RestartFault(Fault):
    """The restart after a kill/stop, logged as its own instantaneous fault (docs/design.md §4)."""

    after_ms: float | None = None
    failed: dict[str, str] = field(default_factory=dict, init=False)  # node -> why it did not restart
    kind: ClassVar[str] = "restart"

    def start(self, ops: ClusterOps, now: float) -> None:
        """Restart every target, even past one that fails; ``failed`` names those (the
        injector keeps only them down). Raises if none came back."""
        super().start(ops, now)
        self.failed = {}
        for node in self.targets:
            try:
                ops.restart(node)
            except Exception as err:  # noqa: BLE001 - the other targets must still come back
                self.failed[node] = f"{type(err).__name__}: {err}"
        if self.failed and len(self.failed) == len(self.targets):
            raise FaultError(f"no node restarted: {'; '.join(f'{n}: {e}' for n, e in self.failed.items())}")

    def params(self) -> dict[str, Any]:
        return {"after_ms": self.after_ms}


@dataclass
class PauseFault(Fault):
    """SIGSTOP the targets; stop() sends SIGCONT. A node gone meanwhile is noted, not an error."""

    kind: ClassVar[str] = "pause"
    holds: ClassVar[str | None] = "process"

    def start(self, ops: ClusterOps, now: float) -> None:
        super().start(ops, now)
        self.targets = _signal_each(self, ops, _signal.SIGSTOP)

    def stop(self, ops: ClusterOps, now: float) -> None:
        """SIGCONT every target, even past one that fails (each left stopped is named)."""
        failed: dict[str, str] = {}
        for node in self.targets:
            try:
                ops.signal(node, _signal.SIGCONT)
            except ProcessGone as err:
                self.notes.setdefault("gone", {})[node] = str(err)
            except Exception as err:  # noqa: BLE001 - the other targets must still resume
                failed[node] = f"{type(err).__name__}: {err}"
        if failed:
            self.notes["resume_failed"] = failed
            raise FaultError(f"could not resume {', '.join(failed)}: {'; '.join(failed.values())}")

    def params(self) -> dict[str, Any]:
        return {"signal": int(_signal.SIGSTOP)}

    def down_nodes(self) -> set[str]:
        return set(self.targets)


@dataclass
class PartitionFault(Fault):
    """Blocks the given directed links (computed by :mod:`faults.partition`)."""

    mode: str = "groups"
    links: tuple[Link, ...] = ()
    groups: tuple[tuple[str, ...], ...] = ()
    oneway: bool = False
    kind: ClassVar[str] = "partition"

    def link_rules(self) -> dict[Link, LinkRule]:
        return {link: LinkRule(blocked=True) for link in self.links}

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, "oneway": self.oneway, "links": [list(link) for link in self.links],
                "groups": [list(g) for g in self.groups]}


@dataclass
class LinkFault(Fault):
    """Delay (+ jitter, hence reordering), loss and duplication on the given directed links."""

    links: tuple[Link, ...] = ()
    rule: LinkRule = field(default_factory=LinkRule)
    kind: ClassVar[str] = "link"

    def link_rules(self) -> dict[Link, LinkRule]:
        return {link: self.rule for link in self.links}

    def params(self) -> dict[str, Any]:
        r = self.rule
        return {"links": [list(link) for link in self.links], "delay_ms": r.delay_ms, "jitter_ms": r.jitter_ms,
                "loss": r.loss, "duplicate": r.duplicate}


CLOCK_PARAMS = ("offset_ms", "strobe_delta_ms", "strobe_period_ms", "drift_ppm")


@dataclass
class ClockFault(Fault):
    """bump / strobe / drift one clock per target; ``reset`` is instantaneous (the injector ends
    the clock faults holding the targets and pushes ``ClockSetting()``)."""

    mode: str = "bump"
    offset_ms: float = 0.0
    strobe_delta_ms: float = 0.0
    strobe_period_ms: float = 0.0
    drift_ppm: float = 0.0
    kind: ClassVar[str] = "clock"

    @property
    def holds(self) -> str | None:  # type: ignore[override]
        return None if self.mode == "reset" else "clock"

    def setting(self) -> ClockSetting:
        since = self.started_ms or 0.0
        if self.mode == "bump":
            return ClockSetting(offset_ms=self.offset_ms)
        if self.mode == "strobe":
            return ClockSetting(strobe_delta_ms=self.strobe_delta_ms, strobe_period_ms=self.strobe_period_ms,
                                since_ms=since)
        if self.mode == "drift":
            return ClockSetting(drift_ppm=self.drift_ppm, since_ms=since)
        return ClockSetting()

    def clock_settings(self) -> dict[str, ClockSetting]:
        return {} if self.mode == "reset" else {node: self.setting() for node in self.targets}

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, **{k: getattr(self, k) for k in CLOCK_PARAMS}}
        if self.mode in ("strobe", "drift") and self.started_ms is not None:
            out["since_ms"] = self.started_ms
        return out


FAULT_CLASSES: dict[str, type[Fault]] = {
    "kill": KillFault, "stop": StopFault, "pause": PauseFault,
    "partition": PartitionFault, "link": LinkFault, "clock": ClockFault,
}


def build_fault(kind: str, fault_id: str, targets: Sequence[str], params: dict[str, Any]) -> Fault:
    """A fault object from a plan step's resolved ``kind`` / ``targets`` / ``params``."""
    t = tuple(targets)
    p = dict(params)
    try:
        if kind in ("kill", "stop"):
            return FAULT_CLASSES[kind](fault_id, t, restart_after_ms=p.get("restart_after_ms"))  # type: ignore[call-arg]
        if kind == "pause":
            return PauseFault(fault_id, t)
        if kind == "partition":
            return PartitionFault(fault_id, t, mode=p["mode"], oneway=bool(p.get("oneway", False)),
                                  links=tuple((s, d) for s, d in p["links"]),
                                  groups=tuple(tuple(g) for g in p.get("groups", ())))
        if kind == "link":
            rule = LinkRule(delay_ms=float(p.get("delay_ms", 0.0)), jitter_ms=float(p.get("jitter_ms", 0.0)),
                            loss=float(p.get("loss", 0.0)), duplicate=float(p.get("duplicate", 0.0)))
            return LinkFault(fault_id, t, links=tuple((s, d) for s, d in p["links"]), rule=rule)
        if kind == "clock":
            return ClockFault(fault_id, t, mode=p["mode"], **{k: float(p.get(k, 0.0)) for k in CLOCK_PARAMS})
    except (KeyError, TypeError, ValueError) as err:
        raise PlanError(f"fault {fault_id}: bad params for {kind}: {err!r} in {params!r}") from None
    raise PlanError(f"fault {fault_id}: unknown fault kind {kind!r}; expected one of {', '.join(FAULT_CLASSES)}")
