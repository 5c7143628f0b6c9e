"""A DLedger group on a fake network, for property tests of the protocol (docs/rocketmq-model.md §8).

Each peer is a small role hosting a :class:`DLedgerServer` under the REAL node runtime (the
``Driver`` of ``tests/roles/fakes.py``: its timers, request deadlines, ``set_links`` and
``set_clock`` commands), all on one fake host clock. Frames between their transports are routed
here with a small random delay, and the faults are the emulator's: a kill (the store is kept for
the restart, and the dead peer's address refuses connections), a pause (nothing runs and what
arrives waits), a cut link, and a clock bump (the node's ``set_clock``).

As it runs, the net checks the invariants and records every breach in :attr:`Net.violations`:

- at most one leader per term;
- an append acknowledged to its writer (SEND_OK) stays on a majority of the peers (a follower
  may cut one it holds, as the leader does, but never the last majority's), and every leader
  elected after the acknowledgement in its term or a later one holds it (a leader of an older
  term, whose ballot was decided before a pause, need not: it cannot have an append acked);
- one index is never acknowledged with two different entries.

:meth:`Net.settled` says whether one leader leads every live peer in one term, but those
dledger 0.2.6 strands (:meth:`Net.stranded`).
"""

from __future__ import annotations

import heapq
import itertools
import random
import zlib
from dataclasses import dataclass, field
from typing import Any

from rmqemu.emulator.roles.common.base import Action, Inbound, Now, Role
from rmqemu.emulator.roles.dledger.config import DLedgerConfig
from rmqemu.emulator.roles.dledger.log import DATA_FILE, DLedgerLog, Entry
from rmqemu.emulator.roles.dledger.member import Role as DRole
from rmqemu.emulator.roles.dledger.server import CODES, DLedgerServer, Hooks
from rmqemu.emulator.roles.dledger.wire import Code
from rmqemu.emulator.transport.base import Received, out_channel
from tests.roles.fakes import Driver, FakeStore, FakeTime


class Peer(Role):
    """A node that is nothing but its DLedger member (the broker hosts one the same way)."""

    role = "broker"

    def __init__(self, name: str, addr: str, cfg: DLedgerConfig, nodes: dict[str, str], seed: int,
                 store: FakeStore, net: "Net") -> None:
        super().__init__(name, addr)
        self.net = net
        self.server = DLedgerServer(cfg, nodes, Hooks(self._on_role, self._on_commit, self._on_truncate),
                                    seed, read_store=store)

    def start(self, now: Now) -> list[Action]:
        return self.server.start(now)

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        return self.server.on_request(msg, now) if msg.frame.code in CODES else []

    def on_timer(self, name: str, now: Now) -> list[Action]:
        return self.server.on_timer(name, now)

    def on_clock(self, now: Now) -> list[Action]:
        return self.server.on_clock(now)

    def on_peers(self, peers: dict[str, str], now: Now) -> list[Action]:
        self.server.set_addresses(peers)
        return []

    def _on_role(self, term: int, role: DRole, now: Now) -> list[Action]:
        self.net.on_role(self.name, self.server, term, role)
        return []

    def _on_commit(self, entries: list[Entry], now: Now) -> list[Action]:
        self.net.commits.setdefault(self.name, []).extend(entries)
        return []

    def _on_truncate(self, removed: list[Entry], now: Now) -> list[Action]:
        self.net.on_truncate(self.name, removed)
        return []


@dataclass(order=True)
class _Frame:
    due: float
    seq: int
    dst: str = field(compare=False)
    event: Received = field(compare=False)


class Net:
    def __init__(self, peers: int = 3, seed: int = 0, delay_ms: tuple[float, float] = (0.5, 5.0),
                 vote_seed: int | None = None, group: str = "g", preferred: str | None = None) -> None:
        self.rng = random.Random(seed)
        self.delay_ms = delay_ms
        self.time = FakeTime(mono_ms=0.0)
        self.ids = [f"n{i}" for i in range(peers)]
        self.group, self.preferred = group, preferred
        self.names = {p: f"{group}-{p}" for p in self.ids}
        self.addrs = {self.names[p]: f"10.0.0.{i + 1}:10911" for i, p in enumerate(self.ids)}
        self.members = list(self.addrs)  # the group's nodes (a subclass may add others to addrs)
        self.by_addr = {a: n for n, a in self.addrs.items()}
        self.stores = {n: FakeStore() for n in self.addrs}
        self.drivers: dict[str, Driver] = {}
        self.paused: set[str] = set()
        self.cut: set[tuple[str, str]] = set()
        self.offsets: dict[str, float] = {n: 0.0 for n in self.addrs}
        self.frames: list[_Frame] = []
        self.last_due: dict[tuple[str, str], float] = {}
        self.seq = itertools.count()
        self.seed = seed if vote_seed is None else vote_seed
        self.leaders: dict[int, set[str]] = {}
        self.role_log: list[tuple[float, str, int, DRole]] = []  # (fake host ms, node, term, role)
        self.acked: dict[int, Entry] = {}
        self.commits: dict[str, list[Entry]] = {}
        self.violations: list[str] = []
        self.leader_held_cuts = 0  # acked entries a follower cut while only the leader kept them
        self.late_leaders = 0  # leaders of a term older than an acked entry's (a ballot won before a pause)
        self.appends = 0
        self.spawns = 0

    # ------------------------------------------------------------------ nodes

    def start(self) -> None:
        for name in self.addrs:
            self._spawn(name)
        self._push_peers()

    def _make_role(self, name: str, seed: int) -> Role:
        """The role a node of the group runs (a subclass may host the member in a broker)."""
        cfg = DLedgerConfig(group=self.group, self_id=name.rsplit("-", 1)[1], peers=tuple(self.ids),
                            preferred_leader=self.preferred)
        return Peer(name, self.addrs[name], cfg, dict(self.names), seed, self.stores[name], self)

    def _spawn(self, name: str) -> None:
        self.spawns += 1
        seed = zlib.crc32(f"{self.seed}/{name}/{self.spawns}".encode())  # not hash(): salted per process
        d = Driver(self._make_role(name, seed), time=self.time, store=self.stores[name])
        d.transport.on_send = lambda sent, src=name: self._route(src, sent)
        d.transport.refuse = {self.addrs[n] for n in self.addrs if n not in self.drivers and n != name}
        self.drivers[name] = d
        for other in self.drivers.values():
            other.transport.refuse.discard(self.addrs[name])
        d.start()
        if self.offsets[name]:
            d.set_clock(offset_ms=self.offsets[name])

    def _push_peers(self) -> None:
        for name, d in self.drivers.items():
            if name not in self.paused:
                d.transport.command("set_links", "links", rules=[], peers=dict(self.addrs))
                d._step()

    def alive(self) -> list[str]:
        return [n for n in self.drivers if n not in self.paused]

    def members_alive(self) -> list[str]:
        return [n for n in self.members if n in self.drivers and n not in self.paused]

    def server(self, name: str) -> DLedgerServer:
        role = self.drivers[name].role
        return role.server if isinstance(role, Peer) else role.dledger.server  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ faults

    def kill(self, name: str) -> None:
        if name in self.drivers:
            del self.drivers[name]
            self.paused.discard(name)
            for other in self.drivers.values():
                other.transport.refuse.add(self.addrs[name])

    def restart(self, name: str) -> None:
        if name not in self.drivers:
            self._spawn(name)
            self._push_peers()

    def pause(self, name: str) -> None:
        if name in self.drivers:
            self.paused.add(name)

    def resume(self, name: str) -> None:
        self.paused.discard(name)

    def bump(self, name: str, offset_ms: float) -> None:
        """Set the node's clock ``offset_ms`` from the host's (0: healed)."""
        self.offsets[name] = offset_ms
        if name in self.drivers and name not in self.paused:
            self.drivers[name].set_clock(offset_ms=offset_ms)

    def leader(self) -> str | None:
        """The live peer that is leader in the highest term, if any."""
        best = [(self.server(n).member.term, n) for n in self.members_alive() if self.server(n).is_leader]
        return max(best)[1] if best else None

    # ------------------------------------------------------------------ the network

    def _route(self, src: str, sent: Any) -> None:
        if sent.addr is not None:
            dst, channel = self.by_addr.get(sent.addr), f"{src}>{self.by_addr.get(sent.addr)}"
            event = Received(channel, src, sent.frame)
        else:
            dst = str(sent.channel).split(">", 1)[0]
            event = Received(out_channel(self.addrs[src]), self.addrs[src], sent.frame, outbound=True,
                             addr=self.addrs[src])
        if dst is None or (src, dst) in self.cut:
            return
        # a connection keeps its order (TCP, ZeroMQ): a frame never overtakes an earlier one on its link
        due = max(self.time.mono_ms + self.rng.uniform(*self.delay_ms), self.last_due.get((src, dst), 0.0))
        self.last_due[(src, dst)] = due
        heapq.heappush(self.frames, _Frame(due, next(self.seq), dst, event))

    def run_for(self, ms: float) -> None:
        end = self.time.mono_ms + ms
        while True:
            self._settle()
            dues = [self.frames[0].due] if self.frames else []
            dues += [d for n in self.alive() if (d := self.drivers[n].runtime._next_due()) is not None]
            nxt = min(dues, default=end + 1)
            if nxt > end:
                self.time.mono_ms = end
                self._settle()
                return
            self.time.mono_ms = max(self.time.mono_ms, nxt)
            while self.frames and self.frames[0].due <= self.time.mono_ms:
                f = heapq.heappop(self.frames)
                if f.dst in self.drivers:  # a dead node's frames are lost; a paused one's wait
                    self.drivers[f.dst].transport.push(f.event)

    def _settle(self) -> None:
        busy = True
        while busy:
            busy = False
            for name in self.alive():
                d = self.drivers.get(name)
                due = d.runtime._next_due() if d else None
                if d and (d.transport.inbox or (due is not None and due <= self.time.mono_ms)):
                    d._step()
                    busy = True

    # ------------------------------------------------------------------ appends and invariants

    def append(self, name: str) -> None:
        """Append a new entry on ``name``, as a producer's send to it would."""
        self.appends += 1
        body, server, made = f"m{self.appends}", self.server(name), {}

        def done(code: int, now: Now) -> list[Action]:
            if code == Code.SUCCESS:
                self.on_acked(made["entry"])
            return []

        def go(now: Now) -> list[Action]:
            made["entry"], actions = server.append(body, now, done)
            return actions

        self.drivers[name].run(go)

    def on_acked(self, entry: Entry) -> None:
        old = self.acked.get(entry.index)
        if old is not None and old != entry:
            self.violations.append(f"index {entry.index} acked twice: {old} and {entry}")
        self.acked[entry.index] = entry

    def on_role(self, name: str, server: DLedgerServer, term: int, role: DRole) -> None:
        self.role_log.append((self.time.mono_ms, name, term, role))
        if role is not DRole.LEADER:
            return
        leaders = self.leaders.setdefault(term, set())
        leaders.add(name)
        if len(leaders) > 1:
            self.violations.append(f"two leaders in term {term}: {sorted(leaders)}")
        # only entries of its term or an older one: a ballot a quorum accepted before the
        # candidate was paused makes it leader of that term once it runs again, after a later
        # term may have acked entries of its own (docs/rocketmq-model.md §8.2, "A late leader")
        missing = [e for e in self.acked.values() if e.term <= term and server.log.get(e.index) != e]
        if missing:
            self.violations.append(f"{name} leads term {term} without acked entries {missing[:3]}")
        if any(e.term > term for e in self.acked.values()):
            self.late_leaders += 1

    def on_truncate(self, name: str, removed: list[Entry]) -> None:
        """A follower may cut entries it holds just as the leader does: its compare raced with
        appends still on the way, or the leader compared it at a stale index (dledger 0.2.6 keeps
        a dispatcher's compare index across terms, docs/rocketmq-model.md §8.2). Harmless while a
        majority still holds every acked one, or while the live leader itself holds them (it
        pushes them again; were it lost meanwhile, :meth:`on_role` sees the next leader lack them)."""
        leaders = [n for n in self.members_alive() if self.server(n).is_leader]
        for e in removed:
            if self.acked.get(e.index) != e or len(self.holders(e)) >= len(self.ids) // 2 + 1:
                continue
            if any(self.server(n).log.get(e.index) == e for n in leaders):
                self.leader_held_cuts += 1
            else:
                self.violations.append(f"{name} cut acked {e}: now only on {self.holders(e)}")

    def holders(self, entry: Entry) -> list[str]:
        """The peers whose log (a dead one's on its disk) holds ``entry``."""
        out = []
        for name in self.members:
            if name in self.drivers:
                log = self.server(name).log
            else:
                log = DLedgerLog()
                log.restore(self.stores[name].read(DATA_FILE))
            if log.get(entry.index) == entry:
                out.append(name)
        return out

    def settled(self) -> bool:
        """One live leader, followed in its term by every other live peer but the stranded ones
        (:meth:`stranded`), and by a majority."""
        alive = self.members_alive()
        if len(alive) != len(self.members):
            return False
        leaders = [n for n in alive if self.server(n).is_leader]
        if len(leaders) != 1:
            return False
        lead = self.server(leaders[0])
        following = [n for n in alive if self.server(n).member.term == lead.member.term
                     and self.server(n).member.leader_id == lead.cfg.self_id]
        rest = set(alive) - set(following)
        return lead.cfg.quorum(len(following)) and rest == set(self.stranded())

    def stranded(self) -> list[str]:
        """Candidates dledger 0.2.6 leaves out (docs/rocketmq-model.md §8.1): a term above the
        leader's, which makes them refuse its heartbeats, and a log behind it, which makes every
        peer refuse their votes before looking at the term. They rejoin at the next election."""
        leader = self.leader()
        if leader is None:
            return []
        lead = self.server(leader)
        out = []
        for n in self.members_alive():
            s = self.server(n)
            if (s.member.role is DRole.CANDIDATE and s.member.term > lead.member.term
                    and (s.log.end_term, s.log.end_index) < (lead.log.end_term, lead.log.end_index)):
                out.append(n)
        return out

    def logs_hold_acked(self) -> list[str]:
        """Peers but the stranded ones whose log lacks an acknowledged entry (none once caught up)."""
        stranded = self.stranded()
        return [f"{n} lacks {e}" for n in self.members_alive() if n not in stranded for e in self.acked.values()
                if self.server(n).log.get(e.index) != e]
