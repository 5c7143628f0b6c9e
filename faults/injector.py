"""The injector: the set of active faults, their merged effects, and healing.

It owns three invariants:

- the link table on the nodes is always the merge (``LinkRule.merged``) of the rules of every
  active fault, and each node's clock is the setting of the clock fault holding it (or the host
  clock) — recomputed and pushed whenever a fault starts or stops;
- two active faults never hold the same resource (process / clock) on one node: the second is
  refused with :class:`OverlappingFault`, naming the holder;
- ``heal_all()`` leaves no node stopped, cut off or skewed, even if some step of it fails.

``fault.start`` is recorded after the fault's effects and the pushes returned (the nodes acked),
so its ``ts`` is when the fault took effect; ``fault.end`` likewise after the heal. Thread-safe:
a launcher may run a plan and serve interactive verbs at once.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import FaultError, OverlappingFault, RmqemuError
from rmqemu.faults.clients import is_client
from rmqemu.faults.kinds import ClockFault, Fault, ProcessExitFault, RestartFault
from rmqemu.faults.ops import ClusterOps

Link = tuple[str, str]


class Injector:
    """Starts and stops faults against a :class:`ClusterOps`, keeping their effects merged."""

    def __init__(self, ops: ClusterOps, *, id_prefix: str = "i") -> None:
        self.ops = ops
        self._active: dict[str, Fault] = {}
        self._lock = threading.RLock()
        self._id_prefix = id_prefix
        self._next_id = 1
        self._used_ids: set[str] = set()
        self._reserved_ids: set[str] = set()
        self._pushed_links: dict[Link, LinkRule] = {}
        self._pushed_clocks: dict[str, ClockSetting] = {}
        self._dead: set[str] = set()  # killed/stopped, fault ended without a restart

    # -- queries -----------------------------------------------------------------------------

    def active(self) -> list[Fault]:
        with self._lock:
            return list(self._active.values())

    def get(self, fault_id: str) -> Fault | None:
        with self._lock:
            return self._active.get(fault_id)

    def new_fault_id(self) -> str:
        """A fresh id for an interactive fault (``i1``, ``i2``, ... never reused in this run)."""
        with self._lock:
            while f"{self._id_prefix}{self._next_id}" in self._used_ids | self._reserved_ids:
                self._next_id += 1
            fault_id = f"{self._id_prefix}{self._next_id}"
            self._reserved_ids.add(fault_id)  # two verbs at once never get the same id
            return fault_id

    def holder(self, node: str, resource: str) -> Fault | None:
        """The active fault holding ``resource`` (``process`` / ``clock``) on ``node``, if any."""
        with self._lock:
            return next((f for f in self._active.values() if f.holds == resource and node in f.targets), None)

    def faults_on(self, node: str, kind: str | None = None) -> list[Fault]:
        with self._lock:
            return [f for f in self._active.values() if node in f.targets and kind in (None, f.kind)]

    def link_table(self) -> dict[Link, LinkRule]:
        """The merged rules of every active fault (what the nodes hold)."""
        with self._lock:
            table: dict[Link, LinkRule] = {}
            for fault in self._active.values():
                for link, rule in fault.link_rules().items():
                    table[link] = table[link].merged(rule) if link in table else rule
            return {k: v for k, v in sorted(table.items()) if not v.is_noop()}

    def clock_setting(self, node: str) -> ClockSetting:
        with self._lock:
            for fault in self._active.values():
                if node in fault.clock_settings():
                    return fault.clock_settings()[node]
            return ClockSetting()

    def down_nodes(self) -> set[str]:
        with self._lock:
            return set(self._dead).union(*(f.down_nodes() for f in self._active.values()))

    # -- start / stop ------------------------------------------------------------------------

    def start(self, fault: Fault) -> Fault:
        """Check overlaps, apply, push merged effects, record ``fault.start``."""
        with self._lock:
            if fault.fault_id in self._used_ids:
                raise OverlappingFault(f"fault id {fault.fault_id!r} was already used in this run")
            self._check_overlap(fault)
            if isinstance(fault, ClockFault) and fault.mode == "reset":
                return self._reset_clocks(fault)
            # Active *before* its effect: a Ctrl-C while a SIGSTOP is being confirmed must still
            # find the fault to heal; a refusal (FaultError) means nothing took effect.
            self._used_ids.add(fault.fault_id)
            self._active[fault.fault_id] = fault
            try:
                fault.start(self.ops, self.ops.host_ms())
            except FaultError:
                del self._active[fault.fault_id]
                self._used_ids.discard(fault.fault_id)
                raise
            except BaseException as err:  # interrupted mid-effect: heal_all must end it
                self._record("fault.start", fault, error=f"{type(err).__name__}: {err}")
                raise
            try:
                self._sync(touched=set(fault.targets))
            except BaseException as err:  # still active, so heal_all cleans it up; record it anyway
                self._record("fault.start", fault, error=str(err))
                raise
            self._record("fault.start", fault)
            return fault

    def stop(self, fault_id: str, *, reason: str = "scheduled", restart: bool | None = None) -> Fault:
        """Heal one active fault and record ``fault.end``. Ending a kill/stop restarts its nodes
        if it has a ``restart_after`` (``restart=None``), always (``True``) or never (``False``),
        and records the restart as its own ``restart`` fault."""
        with self._lock:
            fault = self._active.get(fault_id)
            if fault is None:
                known = ", ".join(self._active) or "none"
                raise FaultError(f"no active fault {fault_id!r} (active: {known})")
            back = fault.down_nodes()
            if isinstance(fault, ProcessExitFault):
                del self._active[fault_id]
                if not (fault.restarts if restart is None else restart):
                    self._dead |= back
                    self._record("fault.end", fault, reason=reason, restarted=False)
                    return fault
                restart_fault = RestartFault(f"{fault_id}.restart", fault.targets, after_ms=fault.restart_after_ms)
                try:
                    restart_fault.start(self.ops, self.ops.host_ms())
                except Exception as err:  # noqa: BLE001 - record that the restart failed
                    self._dead |= back
                    self._record("fault.end", fault, reason=reason, restarted=False, error=str(err))
                    raise
                failed = set(restart_fault.failed)  # some came back, these did not: only they stay down
                self._dead |= failed
                came = back - failed
                error = (FaultError(f"{fault_id}: restart failed for " + "; ".join(
                    f"{n}: {e}" for n, e in sorted(restart_fault.failed.items()))) if failed else None)
                try:
                    self._sync(touched=came, came_back=came)
                finally:
                    extra = {"error": str(error), "not_restarted": sorted(failed)} if error else {}
                    self._record("fault.end", fault, reason=reason, restarted=True, **extra)
                    self._record("fault.start", restart_fault)
                    self._record("fault.end", restart_fault, reason=reason)
                if error is not None:
                    raise error
                return fault
            error: Exception | None = None
            try:
                fault.stop(self.ops, self.ops.host_ms())
            except Exception as err:  # noqa: BLE001 - the fault is gone either way; say so
                error = err
            del self._active[fault_id]
            try:
                self._sync(touched=set(fault.targets), came_back=back)
            except Exception as err:  # noqa: BLE001 - fault.end must still be written; raised after it
                error = error or err
            if error is None:
                self._record("fault.end", fault, reason=reason)
                return fault
            self._record("fault.end", fault, reason=reason, error=str(error))
            raise error

    def stop_on(self, nodes: Iterable[str], kind: str, *, reason: str = "interactive") -> list[str]:
        """Stop the active ``kind`` faults that include any of ``nodes`` (``rmqemu resume X``
        ends the pause holding X, with all its targets). Raises if there is none."""
        wanted = set(nodes)
        with self._lock:
            ids = [f.fault_id for f in self._active.values() if f.kind == kind and wanted & set(f.targets)]
            if not ids:
                raise FaultError(f"no active {kind} fault on {', '.join(sorted(wanted))}")
            for fault_id in ids:
                self.stop(fault_id, reason=reason)
            return ids

    def heal(self, kinds: Iterable[str] | None = None, *, restart_killed: bool = False,
             reason: str = "heal") -> list[str]:
        """Stop every active fault (of ``kinds``), newest first; keep going past failures and
        raise one :class:`FaultError` listing them at the end. Returns the healed fault ids."""
        wanted = None if kinds is None else set(kinds)
        healed: list[str] = []
        failures: list[str] = []
        with self._lock:
            for fault in reversed(self.active()):
                if wanted is not None and fault.kind not in wanted:
                    continue
                try:
                    self.stop(fault.fault_id, reason=reason, restart=restart_killed)
                    healed.append(fault.fault_id)
                except Exception as err:  # noqa: BLE001 - healing must go on
                    self._active.pop(fault.fault_id, None)
                    failures.append(f"{fault.describe()}: {err}")
            if wanted is None:
                try:  # whatever happened above, leave the nodes with a clean table and clocks
                    self._sync(touched=set(self._pushed_clocks), force=True)
                except Exception as err:  # noqa: BLE001 - joins the other failures in one FaultError
                    failures.append(f"final push of links/clocks: {err}")
            if failures:
                raise FaultError("healing failed for " + "; ".join(failures))
        return healed

    def heal_all(self, *, restart_killed: bool = False) -> list[str]:
        """End every fault: resume paused nodes, clear links, reset clocks (end of run, Ctrl-C).
        The nodes of active kill/stop faults are restarted only with ``restart_killed`` (an
        interactive ``heal`` on a live cluster); at the end of a run they stay down."""
        return self.heal(None, restart_killed=restart_killed, reason="heal_all")

    # -- internals ---------------------------------------------------------------------------

    def _check_overlap(self, fault: Fault) -> None:
        if fault.holds is None:
            return
        for node in fault.targets:
            holder = self.holder(node, fault.holds)
            if holder is not None:
                raise OverlappingFault(
                    f"cannot start {fault.describe()}: {node} is held by {holder.describe()} "
                    f"(one {fault.holds} fault per node at a time: stop {holder.fault_id} first)")

    def _reset_clocks(self, fault: ClockFault) -> ClockFault:
        """``clock: reset``: end the clock faults holding the targets, push the host clock."""
        for holder in sorted({h.fault_id for n in fault.targets if (h := self.holder(n, "clock"))}):
            self.stop(holder, reason=f"reset by {fault.fault_id}")
        fault.start(self.ops, self.ops.host_ms())
        self._used_ids.add(fault.fault_id)
        self._sync(touched=set(fault.targets), force=True)
        self._record("fault.start", fault)
        self._record("fault.end", fault, reason="instant")
        return fault

    def _sync(self, touched: set[str], came_back: set[str] = frozenset(), force: bool = False) -> None:  # type: ignore[assignment]
        """Push the merged link table if it changed (or nodes came back), and the clocks of the
        touched nodes that changed; nodes that are down get theirs when they come back."""
        errors: list[Exception] = []  # one node that does not ack must not stop the rest
        table = self.link_table()
        if force or came_back or table != self._pushed_links:
            try:
                self.ops.set_links(table)
                self._pushed_links = table
            except (FaultError, RmqemuError) as err:
                errors.append(err)
        down = self.down_nodes()
        for node in sorted(touched | set(came_back)):
            if node in down or is_client(node):  # a real client (partition/link target) has no clock of ours
                continue
            setting = self.clock_setting(node)
            previous = self._pushed_clocks.get(node, ClockSetting())
            if node in came_back and node not in self._pushed_clocks and setting == ClockSetting():
                continue  # a resumed/restarted node already runs on the host clock
            if force or node in came_back or setting != previous:
                try:
                    self.ops.set_clock(node, setting)
                except (FaultError, RmqemuError) as err:
                    errors.append(err)
                    continue
                if setting == ClockSetting():
                    self._pushed_clocks.pop(node, None)
                else:
                    self._pushed_clocks[node] = setting
        if errors:
            raise errors[0]

    def _record(self, kind: str, fault: Fault, **extra: Any) -> None:
        params = fault.params()
        if fault.notes:
            params = {**params, **fault.notes}
        self.ops.record({"kind": kind, "node": "injector", "fault_id": fault.fault_id, "fault": fault.kind,
                         "targets": list(fault.targets), "params": params, **extra})
