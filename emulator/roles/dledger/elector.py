"""Leader election, as dledger 0.2.6's ``DLedgerLeaderElector`` runs it (docs/rocketmq-model.md §8.1).

DLedger's state-maintainer thread loops: a leader heartbeats every 2 s and steps down once no
quorum answered for 3 heartbeats; a follower that heard no heartbeat for 3 intervals becomes a
candidate; a candidate holds a ballot, and raises its term only after a ballot that a quorum
answered without electing it. Here that loop is a timer armed at the next instant anything is
due, on the member's own (skewable) wall clock as DLedger's ``System.currentTimeMillis()``: a
clock fault moves it (:meth:`Elector.on_clock`), and never sooner than the loop's 10 ms sleep
after its last pass. While a ballot or a heartbeat round waits for answers (DLedger blocks on a
latch, on the monotonic clock) nothing else is maintained.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.protocol import EmulatorCode
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Now
from rmqemu.emulator.roles.dledger.election_rpc import handle_vote
from rmqemu.emulator.roles.dledger.log import DLedgerLog
from rmqemu.emulator.roles.dledger.member import MemberState, Role
from rmqemu.emulator.roles.dledger.wire import Code, Send, Vote

MAINTAIN, BALLOT, BEAT = "dledger:maintain", "dledger:ballot", "dledger:beat"
LOOP_SLEEP_MS = 10  # StateMaintainer.doWork: maintainState(), then sleep(10)
RoleHook = Callable[[int, Role, Now], list[Action]]


@dataclass
class Round:
    """One ballot or heartbeat round in flight: its term and what its answers counted so far."""

    kind: str  # "ballot" or "beat"
    term: int
    count: dict[str, int] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    max_term: int = -1

    def add(self, key: str) -> int:
        self.count[key] = self.count.get(key, 0) + 1
        return self.count[key]

    def n(self, key: str) -> int:
        return self.count.get(key, 0)


class Elector:
    def __init__(self, member: MemberState, log: DLedgerLog, rng: random.Random, send: Send, on_role: RoleHook) -> None:
        self.m, self.cfg, self.log, self.rng = member, member.cfg, log, rng
        self.send, self.on_role = send, on_role
        self.last_leader_hb = self.last_send_hb = self.last_succ_hb = -1.0
        self.next_vote_time = -1.0
        self.need_increase = False
        self.wait_to_vote_next = False  # lastParseResult == WAIT_TO_VOTE_NEXT
        self.round: Round | None = None
        self.ballots = 0
        self.asleep_until = -1.0  # the maintainer sleeps 10 ms after each pass (monotonic)

    # ------------------------------------------------------------------ the maintainer loop

    def arm(self, now: Now) -> list[Action]:
        """Schedule the next maintenance at the instant it is due (nothing while a round waits)."""
        if self.round is not None:
            return []
        hb, leak = self.cfg.heart_beat_time_interval_ms, self.cfg.max_heart_beat_leak
        if self.m.role is Role.LEADER:
            due = self.last_send_hb + hb
        elif self.m.role is Role.FOLLOWER:
            due = self.last_leader_hb + leak * hb
        else:
            due = now.wall_ms if self.need_increase else self.next_vote_time
        return [After(MAINTAIN, max(0.0, due - now.wall_ms, self.asleep_until - now.mono_ms))]

    def on_clock(self, now: Now) -> list[Action]:
        return self.arm(now)

    def maintain(self, now: Now) -> list[Action]:
        if self.round is not None:
            return []
        self.asleep_until = now.mono_ms + LOOP_SLEEP_MS
        if self.m.role is Role.LEADER:
            if now.wall_ms - self.last_send_hb >= self.cfg.heart_beat_time_interval_ms:
                return self._heartbeats(now)
        elif self.m.role is Role.FOLLOWER:
            if now.wall_ms - self.last_leader_hb >= self.cfg.max_heart_beat_leak * self.cfg.heart_beat_time_interval_ms:
                return self._to_candidate(self.m.term, now) + self.arm(now)
        elif now.wall_ms >= self.next_vote_time or self.need_increase:
            return self._ballot(now)
        return self.arm(now)

    # ------------------------------------------------------------------ leader: heartbeats

    def _heartbeats(self, now: Now) -> list[Action]:
        self.last_send_hb = now.wall_ms
        rnd = self.round = Round("beat", self.m.term, {"all": 1, "succ": 1})
        actions: list[Action] = [After(BEAT, self.cfg.heart_beat_time_interval_ms)]
        fields = {"leaderId": self.m.leader_id, "term": rnd.term}
        for peer in self.cfg.others:
            actions += self.send(peer, EmulatorCode.DLEDGER_HEARTBEAT, fields,
                                 lambda resp, n, p=peer: self._on_beat(rnd, p, resp, n), now)
        return actions

    def _on_beat(self, rnd: Round, peer: str, resp: dict[str, Any] | None, now: Now) -> list[Action]:
        if rnd is not self.round:
            return []
        code = resp.get("code") if resp else Code.NETWORK_ERROR
        self.m.peers_live[peer] = code != Code.NETWORK_ERROR
        if code == Code.SUCCESS:
            rnd.add("succ")
        elif code == Code.EXPIRED_TERM:
            rnd.max_term = int(resp.get("term", -1)) if resp else -1
        elif code == Code.INCONSISTENT_LEADER:
            rnd.flags.add("inconsistent")
        elif code == Code.TERM_NOT_READY:
            rnd.add("not_ready")
        done = self.cfg.quorum(rnd.n("succ")) or self.cfg.quorum(rnd.n("succ") + rnd.n("not_ready"))
        if rnd.add("all") == len(self.cfg.peers) or done:
            return [Cancel(BEAT)] + self._beat_done(now)
        return []

    def _beat_done(self, now: Now) -> list[Action]:
        rnd, self.round = self.round, None
        self.asleep_until = now.mono_ms + LOOP_SLEEP_MS
        assert rnd is not None
        actions: list[Action] = []
        if self.cfg.quorum(rnd.n("succ")):
            self.last_succ_hb = now.wall_ms
        elif self.cfg.quorum(rnd.n("succ") + rnd.n("not_ready")):
            self.last_send_hb = -1
        elif rnd.max_term > rnd.term:
            actions = self._to_candidate(rnd.max_term, now)
        elif "inconsistent" in rnd.flags:
            actions = self._to_candidate(rnd.term, now)
        elif now.wall_ms - self.last_succ_hb > self.cfg.max_heart_beat_leak * self.cfg.heart_beat_time_interval_ms:
            actions = self._to_candidate(rnd.term, now)
        return actions + self.arm(now)

    # ------------------------------------------------------------------ candidate: ballots

    def _next_vote_time(self, now: Now) -> float:
        if self.taking_leadership():
            lo, hi = self.cfg.min_take_leadership_vote_interval_ms, self.cfg.max_take_leadership_vote_interval_ms
        else:
            lo, hi = self.cfg.min_vote_interval_ms, self.cfg.max_vote_interval_ms
        return now.wall_ms + lo + self.rng.randrange(hi - lo)

    def _ballot(self, now: Now) -> list[Action]:
        actions: list[Action] = []
        if self.wait_to_vote_next or self.need_increase:
            actions.append(self.m.next_term())
            self.wait_to_vote_next = False
        if self.need_increase:
            self.next_vote_time, self.need_increase = self._next_vote_time(now), False
            return actions + self.arm(now)
        self.ballots += 1
        rnd = self.round = Round("ballot", self.m.term, max_term=self.m.term)
        actions.append(After(BALLOT, 2000 + self.rng.randrange(self.cfg.max_vote_interval_ms)))
        fields = {"leaderId": self.cfg.self_id, "term": rnd.term,
                  "ledgerEndIndex": self.log.end_index, "ledgerEndTerm": self.log.end_term}
        for peer in self.cfg.peers:
            if peer == self.cfg.self_id:
                result, term, persist = handle_vote(self, fields, now, self_vote=True)
                actions += persist + self._on_vote(rnd, {"voteResult": result, "term": term}, now)
            else:
                actions += self.send(peer, EmulatorCode.DLEDGER_VOTE, fields,
                                     lambda resp, n: self._on_vote(rnd, resp, n), now)
        return actions

    def _on_vote(self, rnd: Round, resp: dict[str, Any] | None, now: Now) -> list[Action]:
        if rnd is not self.round:
            return []
        result = resp.get("voteResult", Vote.UNKNOWN) if resp else Vote.UNKNOWN
        if result != Vote.UNKNOWN:
            rnd.add("valid")
        if result == Vote.ACCEPT:
            rnd.add("accepted")
        elif result == Vote.REJECT_ALREADY_HAS_LEADER:
            rnd.flags.add("has_leader")
        elif result in (Vote.REJECT_TERM_SMALL_THAN_LEDGER, Vote.REJECT_EXPIRED_VOTE_TERM):
            rnd.max_term = max(rnd.max_term, int(resp.get("term", -1)) if resp else -1)
        elif result in (Vote.REJECT_EXPIRED_LEDGER_TERM, Vote.REJECT_SMALL_LEDGER_END_INDEX):
            rnd.add("bigger_ledger")
        elif result == Vote.REJECT_TERM_NOT_READY:
            rnd.add("not_ready")
        done = ("has_leader" in rnd.flags or self.cfg.quorum(rnd.n("accepted"))
                or self.cfg.quorum(rnd.n("accepted") + rnd.n("not_ready")))
        if rnd.add("all") == len(self.cfg.peers) or done:
            return [Cancel(BALLOT)] + self._ballot_done(now)
        return []

    def _ballot_done(self, now: Now) -> list[Action]:
        rnd, self.round = self.round, None
        self.asleep_until = now.mono_ms + LOOP_SLEEP_MS
        assert rnd is not None
        q, actions = self.cfg.quorum, []
        valid, accepted = rnd.n("valid"), rnd.n("accepted")
        if rnd.max_term > rnd.term:
            self.wait_to_vote_next, self.next_vote_time = True, self._next_vote_time(now)
            actions = self._to_candidate(rnd.max_term, now)
        elif "has_leader" in rnd.flags:
            hb = self.cfg.heart_beat_time_interval_ms * self.cfg.max_heart_beat_leak
            self.next_vote_time = self._next_vote_time(now) + hb
        elif not q(valid):
            self.next_vote_time = self._next_vote_time(now)
        elif not q(valid - rnd.n("bigger_ledger")):
            self.next_vote_time = self._next_vote_time(now) + self.cfg.max_vote_interval_ms
        elif q(accepted):
            actions = self._to_leader(rnd.term, now)
        elif q(accepted + rnd.n("not_ready")):
            pass  # REVOTE_IMMEDIATELY: the next maintenance votes again in this term
        else:
            self.wait_to_vote_next, self.next_vote_time = True, self._next_vote_time(now)
        return actions + self.arm(now)

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == MAINTAIN:
            return self.maintain(now)
        kind = self.round.kind if self.round is not None else None
        if name == BALLOT and kind == "ballot":
            return self._ballot_done(now)
        if name == BEAT and kind == "beat":
            return self._beat_done(now)
        return []

    # ------------------------------------------------------------------ role changes

    def _to_leader(self, term: int, now: Now) -> list[Action]:
        if self.m.term != term:
            return []
        self.m.change_to_leader(term)
        self.last_send_hb = -1
        return self.on_role(term, Role.LEADER, now)

    def _to_candidate(self, term: int, now: Now) -> list[Action]:
        """``changeRoleToCandidate``: skipped for a term older than ours."""
        if term < self.m.term:
            return []
        self.m.change_to_candidate(term)
        return self.on_role(term, Role.CANDIDATE, now)

    def to_follower(self, term: int, leader_id: str, now: Now) -> list[Action]:
        self.wait_to_vote_next = False
        self.m.change_to_follower(term, leader_id)
        self.last_leader_hb = now.wall_ms
        return self.on_role(term, Role.FOLLOWER, now)

    def taking_leadership(self) -> bool:
        """The preferred leader is running for the term a transfer handed it."""
        return (self.cfg.preferred_leader == self.cfg.self_id
                and self.m.term_to_take_leadership == self.m.term)
