"""One DLedger member, as the broker that hosts it uses it (dledger 0.2.6 ``DLedgerServer``).

The broker hands it the RPCs of its peers (:meth:`DLedgerServer.on_request`), its timers (names
starting ``dledger:``) and clock changes, and appends a stored message with
:meth:`DLedgerServer.append`; it learns back, through :class:`Hooks`, every role change, every
entry committed (in log order, on every member: what the broker dispatches to its consume
queues) and every entry a truncation removed. Peers are reached at the addresses of the nodes
named for them (:meth:`DLedgerServer.set_addresses`, from the launcher's node table). The
member's own events, ``dledger.role`` and ``dledger.truncate``, are written here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from rmqemu import wire_json
from rmqemu.emulator.protocol import EmulatorCode, request
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply, Request
from rmqemu.emulator.roles.dledger.config import DLedgerConfig
from rmqemu.emulator.roles.dledger.election_rpc import handle_heartbeat, handle_vote
from rmqemu.emulator.roles.dledger.elector import Elector
from rmqemu.emulator.roles.dledger.handler import HANDLER_TIMER, EntryHandler, Push
from rmqemu.emulator.roles.dledger.log import DATA_FILE, DLedgerLog, Entry
from rmqemu.emulator.roles.dledger.member import TERM_FILE, MemberState, Role
from rmqemu.emulator.roles.dledger.pusher import PUSH_TIMER, AckCallback, Pusher
from rmqemu.emulator.roles.dledger.transfer import CATCH_UP_TIMER, CHECK_TIMER, Transfer
from rmqemu.emulator.roles.dledger.wire import Code, ReplyCallback

CODES = {EmulatorCode.DLEDGER_VOTE, EmulatorCode.DLEDGER_HEARTBEAT, EmulatorCode.DLEDGER_PUSH,
         EmulatorCode.DLEDGER_LEADERSHIP_TRANSFER}


@dataclass(frozen=True)
class Hooks:
    """What the host broker does on a role change, a commit and a truncation (each returns actions)."""

    on_role: Callable[[int, Role, Now], list[Action]]
    on_commit: Callable[[list[Entry], Now], list[Action]]
    on_truncate: Callable[[list[Entry], Now], list[Action]] = lambda removed, now: []


class DLedgerServer:
    def __init__(self, cfg: DLedgerConfig, peer_nodes: dict[str, str], hooks: Hooks, seed: int = 0,
                 read_store: Callable[[str], str | None] = lambda p: None) -> None:
        self.cfg, self.peer_nodes, self.hooks = cfg, dict(peer_nodes), hooks
        self.member = MemberState(cfg)
        self.member.load(read_store(TERM_FILE))
        self.log = DLedgerLog()
        self.dropped_lines = self.log.restore(read_store(DATA_FILE))
        self.addrs: dict[str, str] = {}
        self.elector = Elector(self.member, self.log, random.Random(seed), self.send, self._role_changed)
        self.pusher = Pusher(self)
        self.handler = EntryHandler(self)
        self.transfer = Transfer(self)
        self.last_role: tuple[int, Role, str | None] | None = None  # of the last dledger.role written

    @property
    def is_leader(self) -> bool:
        return self.member.role is Role.LEADER

    def set_addresses(self, node_addrs: dict[str, str]) -> None:
        """Where each peer listens now, by its node's name (a restarted peer keeps its port)."""
        self.addrs = {p: node_addrs[n] for p, n in self.peer_nodes.items() if n in node_addrs}

    def start(self, now: Now) -> list[Action]:
        return self.elector.arm(now) + self.transfer.start()

    def on_clock(self, now: Now) -> list[Action]:
        return self.elector.on_clock(now) + self.pusher.wake(now)

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name.startswith(PUSH_TIMER):
            return self.pusher.wake(now)
        if name == HANDLER_TIMER:
            return self.handler.on_timer(now)
        if name in (CHECK_TIMER, CATCH_UP_TIMER):
            return self.transfer.on_timer(name, now)
        return self.elector.on_timer(name, now)

    # ------------------------------------------------------------------ RPCs

    def send(self, peer: str, code: int, fields: dict[str, Any], cb: ReplyCallback, now: Now,
             body: bytes | None = None) -> list[Action]:
        """A request to a peer; ``cb`` gets the answer's fields, or None: no answer in 3 s, or no
        address known for the peer yet (DLedger's failed connect, answered at once)."""
        addr = self.addrs.get(peer)
        fields = {**fields, "group": self.cfg.group, "remoteId": peer}
        if addr is None:
            return cb(None, now)
        frame = request(code, fields, body)
        return [Request(addr, frame, self.cfg.rpc_timeout_ms,
                        lambda resp, now: cb(dict(resp.fields) if resp is not None else None, now))]

    def send_push(self, peer: str, fields: dict[str, Any], entry: Entry | None, cb: ReplyCallback,
                  now: Now) -> list[Action]:
        body = wire_json.dumps(entry.to_wire()) if entry is not None else None
        return self.send(peer, EmulatorCode.DLEDGER_PUSH, fields, cb, now, body)

    def on_request(self, msg: Inbound, now: Now) -> list[Action]:
        """A peer's VOTE, HEART_BEAT or PUSH; anything malformed is answered UNEXPECTED_ARGUMENT."""
        fields, code = dict(msg.frame.fields), msg.frame.code
        if fields.get("group") != self.cfg.group or fields.get("remoteId") != self.cfg.self_id:
            return [self._reply(msg, {"code": Code.UNKNOWN_MEMBER, "term": self.member.term})]
        try:
            if code == EmulatorCode.DLEDGER_VOTE:
                result, term, actions = handle_vote(self.elector, fields, now)
                return actions + [self._reply(msg, {"voteResult": result, "term": term})]
            if code == EmulatorCode.DLEDGER_HEARTBEAT:
                answer, actions = handle_heartbeat(self.elector, fields, now)
                return actions + [self._reply(msg, answer)]
            if code == EmulatorCode.DLEDGER_LEADERSHIP_TRANSFER:
                return self.transfer.on_request(msg, fields, lambda answer: [self._reply(msg, answer)], now)
            entry = Entry.from_wire(wire_json.loads(msg.frame.body)) if msg.frame.body else None
        except ValueError as exc:
            return [self._reply(msg, {"code": Code.UNEXPECTED_ARGUMENT, "term": self.member.term, "error": str(exc)})]
        return self.handler.on_push(Push(fields, entry, lambda answer: [self._reply(msg, answer)], now.wall_ms), now)

    def _reply(self, msg: Inbound, fields: dict[str, Any]) -> Reply:
        plain = {k: (int(v) if isinstance(v, Code) else v) for k, v in fields.items()}
        return Reply(msg.channel, msg.frame.response(fields=plain))

    # ------------------------------------------------------------------ the log, for the host and the pushes

    def append(self, body: str, now: Now, done: AckCallback) -> tuple[Entry | None, list[Action]]:
        """``handleAppend``: a leader appends and answers through ``done`` once a quorum holds the
        entry (or it times out, or the term changes); anyone else answers at once, and the entry
        is None."""
        if not self.is_leader:
            return None, done(Code.NOT_LEADER, now)
        if self.member.transferee is not None:
            return None, done(Code.LEADER_TRANSFERRING, now)
        if self.pusher.pending_full(self.member.term):
            return None, done(Code.LEADER_PENDING_FULL, now)
        entry, write = self.log.append_as_leader(self.member.term, body)
        return entry, [write] + self.pusher.wait_ack(entry, now, done)

    def append_as_follower(self, entry: Entry, now: Now) -> list[Action]:
        return [self.log.append_as_follower(entry)]

    def truncate(self, entry: Entry, now: Now) -> list[Action]:
        removed, write = self.log.truncate(entry)
        actions: list[Action] = [write]
        if removed and removed != [entry]:
            gone = [e for e in removed if e != entry]
            actions.append(Emit("dledger.truncate", {
                "group": self.cfg.group, "peer": self.cfg.self_id, "term": self.member.term,
                "index": entry.index, "removed": len(gone), "removed_terms": sorted({e.term for e in gone})}))
            actions += self.hooks.on_truncate(gone, now)
        return actions

    def commit(self, term: int, index: int, now: Now) -> list[Action]:
        newly = self.log.update_committed_index(term, index, self.member.term)
        return self.hooks.on_commit(newly, now) if newly else []

    # ------------------------------------------------------------------ role changes

    def _role_changed(self, term: int, role: Role, now: Now) -> list[Action]:
        m = self.member
        actions: list[Action] = []
        if (term, role, m.leader_id) != self.last_role:  # a candidate stepping down again says nothing new
            self.last_role = (term, role, m.leader_id)
            actions.append(Emit("dledger.role", {
                "group": self.cfg.group, "peer": self.cfg.self_id, "term": term, "role": role.value,
                "leader": m.leader_id, "ledger_end_index": self.log.end_index,
                "committed_index": self.log.committed_index}))
        actions += self.transfer.role_changed(term, role)
        actions += self.hooks.on_role(term, role, now)
        if role is Role.FOLLOWER:
            actions += self.handler.work(now)
        elif role is Role.LEADER:
            actions += self.pusher.wake(now)
        return actions

    def snapshot(self) -> dict[str, Any]:
        m, log = self.member, self.log
        return {"group": self.cfg.group, "peer": self.cfg.self_id, "role": m.role.value, "term": m.term,
                "leader": m.leader_id, "vote_for": m.vote_for, "ledger_end_index": log.end_index,
                "ledger_end_term": log.end_term, "committed_index": log.committed_index,
                "ballots": self.elector.ballots}
