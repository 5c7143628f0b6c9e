"""The DLedger groups of a running cluster: which peer leads, which one is master now.

A DLedger group (docs/rocketmq-model.md §8; the topology's ``dledger:``, docs/design.md §5) has
no fixed master: its peers elect a leader, whose broker becomes master (brokerId 0) while the
others are slaves (brokerId ``int(peer[1:]) + 1``). So whatever the launcher must do on a
group's master (create the topology's topics, read the backlog at the drain) asks the peers'
``state`` first, over the control plane. The peers' answers are judged by pure functions
(:func:`leader_of`, :func:`masters_in`, :func:`master_of`), tested on made-up states.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from rmqemu.errors import ClusterError, ControlError

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher
    from rmqemu.emulator.launcher.topology_load import NodePlan

STATE_TIMEOUT_MS = 2000.0  # one peer's `state`: a peer that does not answer this fast counts as silent
MASTER_WAIT_CLUSTER_S = 60.0  # an election, a preferred leader's takeover and a registration fit many times
MASTER_WAIT_MIN_S = 20.0  # wall floor: at scale 0.01 the cluster bound alone is 0.6 s of Python start-up
POLL_MS = 50.0

States = Mapping[str, Mapping[str, Any] | None]  # peer node -> its broker's `state`, None: no answer


def groups(plans: Iterable["NodePlan"]) -> dict[str, list[str]]:
    """Broker name -> the node names of its peers (in peer order), for every DLedger group."""
    out: dict[str, list[str]] = {}
    for p in plans:
        if p.peer is not None and p.broker is not None:
            out.setdefault(p.broker, []).append(p.name)
    return out


def leader_of(states: States) -> str | None:
    """The peer whose DLedger member is LEADER of the highest term (a tie, which one vote per
    term rules out, goes to the first by name); None when no peer says it leads."""
    leaders = []
    for name, s in states.items():
        d = s.get("dledger") if s is not None else None
        if isinstance(d, Mapping) and d.get("role") == "LEADER":
            term = d.get("term")
            leaders.append((term if isinstance(term, int) else -1, name))
    if not leaders:
        return None
    top = max(term for term, _ in leaders)
    return min(name for term, name in leaders if term == top)


def masters_in(states: States) -> list[str]:
    """The peers whose broker says it is master (``broker_id`` 0), by name."""
    return sorted(name for name, s in states.items() if s is not None and s.get("broker_id") == 0)


def master_of(states: States) -> str | None:
    """The group's master: the one peer that says ``broker_id`` 0, or, while an old master has
    not yet stepped down, the one of those that leads the highest term; None if no peer is master."""
    masters = masters_in(states)
    if len(masters) == 1:
        return masters[0]
    return leader_of({name: states[name] for name in masters})


def peer_states(cluster: "Launcher", broker: str, timeout_ms: float = STATE_TIMEOUT_MS) -> dict[str, Any]:
    """The ``state`` of each live, running peer of ``broker`` (None for one that did not answer);
    an exited or paused peer is left out (it cannot answer)."""
    out: dict[str, Any] = {}
    for name in groups(cluster.plans.values()).get(broker, []):
        proc = cluster.procs.get(name)
        if proc is None or not proc.alive() or name in cluster.stopped:
            continue
        try:
            out[name] = cluster.state(name, timeout_ms)
        except ControlError:
            out[name] = None
    return out


def leader(cluster: "Launcher", broker: str) -> str | None:
    """``Launcher.dledger_leader``: the node of ``broker``'s current DLedger leader, None if none."""
    return leader_of(peer_states(cluster, broker))


def _seen(cluster: "Launcher", broker: str, states: States) -> str:
    """What each peer said, for an error: ``broker-a-n0 broker_id 1 FOLLOWER term 2, ...``."""
    parts = []
    for name in groups(cluster.plans.values()).get(broker, []):
        s = states.get(name)
        if name not in states:
            parts.append(f"{name} not running")
        elif s is None:
            parts.append(f"{name} no answer")
        else:
            d = s.get("dledger") if isinstance(s.get("dledger"), Mapping) else {}
            parts.append(f"{name} broker_id {s.get('broker_id')} {d.get('role', '?')} term {d.get('term', '?')}")
    return ", ".join(parts)


def wait_master(cluster: "Launcher", broker: str, timeout_s: float | None = None) -> str:
    """The node of ``broker``'s master once exactly one peer says ``broker_id`` 0, waiting for the
    election (bounded: ``timeout_s``, by default :data:`MASTER_WAIT_CLUSTER_S` cluster seconds, at
    least :data:`MASTER_WAIT_MIN_S` wall seconds); :class:`ClusterError` naming the group and what
    each peer said when none did in time."""
    if timeout_s is None:
        timeout_s = max(MASTER_WAIT_MIN_S, MASTER_WAIT_CLUSTER_S * cluster.scale)
    deadline = time.monotonic() + timeout_s
    while True:
        states = peer_states(cluster, broker)
        masters = masters_in(states)
        if len(masters) == 1:
            return masters[0]
        if time.monotonic() > deadline:
            raise ClusterError(f"DLedger group {broker}: no single master (a peer whose broker_id is 0) after "
                               f"{timeout_s:g}s: {_seen(cluster, broker, states)}")
        cluster.pump(POLL_MS)
