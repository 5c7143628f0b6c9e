"""What the fault injector needs from a running cluster: the :class:`ClusterOps` protocol.

The launcher implements it over its process table and control plane; tests use
:class:`faults.testing.FakeOps`. Every method that changes the cluster returns only once the
change *took effect* (signal delivered and observed, nodes acked), so the injector can stamp
``fault.start`` / ``fault.end`` with the host time right after the call.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.emulator.node.clock import ClockSetting
from rmqemu.emulator.node.links import LinkRule

Link = tuple[str, str]


@runtime_checkable
class ClusterOps(Protocol):
    """The effects a fault may have on a run. Implemented by the launcher (``ClusterOps``)."""

    def node_infos(self) -> dict[str, NodeInfo]:
        """Every node of the run by name (live or not), in start order."""
        ...

    def host_ms(self) -> float:
        """Host wall time in ms (``emulator.node.clock.host_ms`` in a real run)."""
        ...

    def signal(self, node: str, sig: int) -> None:
        """Send ``sig`` to the node's process and return once it took effect.

        Must refuse with :class:`rmqemu.errors.UnsafeSignal` anything but a process this run
        spawned (use :class:`emulator.launcher.signals.ProcessRegistry`), and raise
        :class:`rmqemu.errors.ProcessGone` if the node has exited. "Took effect": for SIGKILL and
        SIGTERM the process has exited (reaped), for SIGSTOP it is stopped, for SIGCONT running.
        The launcher must remember which nodes it stopped: they cannot ack control commands.
        """
        ...

    def restart(self, node: str) -> None:
        """Respawn an exited node with the same argv, store dir and port; return once it is ready
        (it has said ready on the control plane). The injector pushes links and clock afterwards."""
        ...

    def set_links(self, rules: dict[Link, LinkRule]) -> None:
        """Replace the link table of every running, not-stopped node with this FULL table and wait
        for their acks. A stopped or dead node gets the table again when it resumes or restarts
        (the injector calls ``set_links`` again then)."""
        ...

    def set_clock(self, node: str, setting: ClockSetting) -> None:
        """Replace one node's clock setting and wait for its ack (never called for a stopped or
        dead node: the injector defers it until the node is back)."""
        ...

    def dledger_leader(self, broker: str) -> str | None:
        """The node name of the DLedger group ``broker``'s leader now, or None if it has none
        (an election is under way). Asked when a step naming a role term fires (faults.binding).

        Only asked for a DLedger group of :meth:`node_infos` (peers with ``peer`` set). The
        answer is the peer that last said it became LEADER of the group's highest term seen
        (docs/rocketmq-model.md §8.1), never a peer that has exited since; a stopped (SIGSTOP) one
        may still be named, as it still believes it leads."""
        ...

    def real_clients(self) -> dict[str, list[str] | None] | None:
        """Node -> the real clients (``client@<pid>``) on its remoting port now (None for a node
        that did not answer); None when the run has no remoting port."""
        ...

    def record(self, event: dict[str, Any]) -> None:
        """Append one event to ``faults.jsonl``, adding ``ts`` (host ms) if absent; flush it."""
        ...

    def node_exited(self, node: str, signal: int) -> None:
        """A node was killed by the injector: write its ``node.exit`` with ``signal`` now (docs/design.md §7).
        The launcher should not write a second ``node.exit`` when it reaps that process."""
        ...
