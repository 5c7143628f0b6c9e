"""Random fault schedules for a DLedger group on the fake network (:mod:`tests.roles.dledger_net`),
as plain data, and the run that plays one, Jepsen-style: a writer appends to whoever leads every
250 ms while the faults come and go, then every fault is healed and the group must settle.

A step is ``(at_ms, kind, target, duration_ms, amount_ms)``. ``target`` is a peer's index; for
the ``*_leader`` kinds it is whoever leads when the step fires, for ``*_follower`` the
``target``-th (modulo) of the others then (nothing happens without a leader).
Kinds: ``kill`` (restarted after the duration, its store kept), ``pause``, ``isolate`` (every
link to and from it cut), ``oneway`` (only what it sends is lost), ``bump`` (its clock moved by
``amount_ms``, set back after the duration), ``kill_leader``, ``pause_leader``,
``isolate_leader``, ``kill_follower`` and ``isolate_follower``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from tests.roles.dledger_net import Net

KINDS = ("kill", "pause", "isolate", "oneway", "bump", "kill_leader", "pause_leader", "isolate_leader",
         "kill_follower", "isolate_follower")
Step = tuple[float, str, int, float, float]
WRITE_EVERY_MS = 250.0
SETTLE_BOUND_MS = 30000.0  # after the last heal: 3 heartbeat leaks, a has-leader backoff and ballots
CATCH_UP_BOUND_MS = 60000.0  # after settling, for every peer to hold every acknowledged entry
# ... plus this much an entry of the leader's log: a follower whose answers were lost (the leader's
# requests timed out, e.g. while it was paused) is re-acked one entry a second, the leader
# re-pushing the one after its watermark and the follower answering one at or below its end only
# in checkAbnormalFuture, once a second (dledger 0.2.6, docs/rocketmq-model.md §8.2)
REACK_MS = 1000.0


def steps(peers: int = 3, horizon_ms: float = 40000.0, max_steps: int = 6) -> st.SearchStrategy[list[Step]]:
    step = st.tuples(st.floats(0, horizon_ms), st.sampled_from(KINDS), st.integers(0, peers - 1),
                     st.floats(200, 20000), st.floats(-20000, 20000))
    return st.lists(step, max_size=max_steps)


@dataclass
class Outcome:
    violations: list[str]
    settled_after_ms: float | None  # from the last heal to one leader followed by all; None: never
    acked: int
    missing: list[str]  # acked entries a peer still lacked when the catch-up bound ran out


def play(net: Net, schedule: list[Step], horizon_ms: float = 40000.0) -> Outcome:
    """Run ``schedule`` with a writer, heal everything at ``horizon_ms`` (or after the last heal
    the schedule holds, if later), and wait up to :data:`SETTLE_BOUND_MS` for the group to settle."""
    net.start()
    names = list(net.members)
    timeline: list[tuple[float, int, str, str, float]] = []  # (at, order, what, node, amount)
    for i, (at, kind, target, duration, amount) in enumerate(schedule):
        timeline.append((at, i, kind, names[target], amount))
        timeline.append((at + duration, i, "heal:" + kind, names[target], 0.0))
    timeline.sort()
    hit: dict[int, str | None] = {}
    end = max([horizon_ms] + [t for t, *_ in timeline])
    for at, i, what, node, amount in timeline:
        write_until(net, at)
        target: str | None = node
        role = what.rsplit("_", 1)[1] if what.endswith(("_leader", "_follower")) else None
        if role and what.startswith("heal:"):
            target = hit.get(i)
        elif role:
            hit[i] = target = _by_role(net, role, names.index(node))
        if target is not None:
            _apply(net, what.removesuffix(f"_{role}"), target, amount)
    write_until(net, end)
    _heal_all(net)
    healed = net.time.mono_ms
    settled_after = None
    while net.time.mono_ms - healed < SETTLE_BOUND_MS:
        write_until(net, net.time.mono_ms + 500)
        if net.settled():
            settled_after = net.time.mono_ms - healed
            break
    missing: list[str] = []
    if settled_after is not None:  # then every peer catches up, a lost push re-sent once a second
        leader = net.leader()
        entries = net.server(leader).log.end_index + 1 if leader is not None else 0
        caught_up = net.time.mono_ms + CATCH_UP_BOUND_MS + REACK_MS * entries
        while (missing := net.logs_hold_acked()) and net.time.mono_ms < caught_up:
            write_until(net, net.time.mono_ms + 500, write=False)
    return Outcome(list(net.violations), settled_after, len(net.acked), missing)


def write_until(net: Net, until: float, write: bool = True) -> None:
    while net.time.mono_ms < until:
        if write:
            leader = net.leader()
            if leader is not None:
                net.append(leader)
        net.run_for(min(WRITE_EVERY_MS, until - net.time.mono_ms))


def _by_role(net: Net, role: str, index: int) -> str | None:
    leader = net.leader()
    if leader is None or role == "leader":
        return leader
    followers = [n for n in net.members_alive() if n != leader]
    return followers[index % len(followers)] if followers else None


def _apply(net: Net, what: str, node: str, amount: float) -> None:
    others = [n for n in net.members if n != node]
    if what == "kill":
        net.kill(node)
    elif what == "heal:kill":
        net.restart(node)
    elif what == "pause":
        net.pause(node)
    elif what == "heal:pause":
        net.resume(node)
    elif what in ("isolate", "oneway"):
        net.cut |= {(node, o) for o in others} | ({(o, node) for o in others} if what == "isolate" else set())
    elif what in ("heal:isolate", "heal:oneway"):
        net.cut -= {(node, o) for o in others} | {(o, node) for o in others}
    elif what == "bump":
        net.bump(node, amount)
    elif what == "heal:bump":
        net.bump(node, 0.0)


def _heal_all(net: Net) -> None:
    net.cut.clear()
    for node in net.members:
        net.restart(node)
        net.resume(node)
        if net.offsets[node]:
            net.bump(node, 0.0)
