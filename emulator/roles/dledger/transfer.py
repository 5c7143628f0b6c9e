"""Leadership transfer to a preferred leader (RocketMQ's ``preferredLeaderId``): dledger 0.2.6's
``DLedgerServer.checkPreferredLeader`` and ``handleLeadershipTransfer``, and the elector's
``handleTakeLeadership`` with its ``TakeLeadershipTask`` (docs/rocketmq-model.md §8.4).

Every second a leader that is not the preferred peer looks at it: live (it answered the last
heartbeat) and fewer than 1000 entries behind, it becomes the transferee. The leader refuses
appends (LEADER_TRANSFERRING) and asks it to take over; the transferee waits up to 1 s to hold
the leader's last entry, then runs for the next term at once, voting every 30-100 ms, and answers
the leader when it has won (SUCCESS) or lost. The leader waits for that answer (3 s at most)
before it looks again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import EmulatorCode
from rmqemu.emulator.roles.common.base import Action, After, Every, Inbound, Now
from rmqemu.emulator.roles.dledger.member import Role
from rmqemu.emulator.roles.dledger.wire import Code, int_field

if TYPE_CHECKING:
    from rmqemu.emulator.roles.dledger.server import DLedgerServer

CHECK_TIMER, CATCH_UP_TIMER = "dledger:preferred", "dledger:take_wait"
CATCH_UP_POLL_MS = 10  # the transferee's Thread.sleep(10) while it catches up
Answer = Callable[[dict[str, Any]], list[Action]]


class Transfer:
    def __init__(self, server: "DLedgerServer") -> None:
        self.s = server
        self.asking = False  # the leader waits for its transferee's answer
        self.catching_up: tuple[dict[str, Any], Answer, float] | None = None  # request, answer, deadline (wall)
        self.task: Answer | None = None  # TakeLeadershipTask's pending answer

    def start(self) -> list[Action]:
        preferred = self.s.cfg.preferred_leader
        return [Every(CHECK_TIMER, 1000, 1000)] if preferred and preferred != self.s.cfg.self_id else []

    def on_timer(self, name: str, now: Now) -> list[Action]:
        return self.check(now) if name == CHECK_TIMER else self._catch_up(now)

    # ------------------------------------------------------------------ the leader's side

    def check(self, now: Now) -> list[Action]:
        s, m = self.s, self.s.member
        peer = s.cfg.preferred_leader
        if self.asking or not s.is_leader or m.transferee is not None or peer is None or not m.peers_live.get(peer):
            return []
        term = m.term
        if s.log.end_index - s.pusher.watermark(term, peer) >= s.cfg.max_leadership_transfer_wait_index:
            return []
        m.transferee, self.asking = peer, True
        fields = {"term": term, "leaderId": s.cfg.self_id, "transferId": s.cfg.self_id, "transfereeId": peer,
                  "takeLeadershipLedgerIndex": s.log.end_index}
        return s.send(peer, EmulatorCode.DLEDGER_LEADERSHIP_TRANSFER, fields,
                      lambda resp, n: self._answered(term, resp, n), now)

    def _answered(self, term: int, resp: dict[str, Any] | None, now: Now) -> list[Action]:
        self.asking = False
        m = self.s.member
        if (resp is None or resp.get("code") != Code.SUCCESS or m.term == term) and m.role is Role.LEADER:
            m.transferee = None
        return []

    # ------------------------------------------------------------------ the transferee's side

    def on_request(self, msg: Inbound, fields: dict[str, Any], answer: Answer, now: Now) -> list[Action]:
        m = self.s.member
        if fields.get("transfereeId") != self.s.cfg.self_id:
            return answer({"code": Code.UNEXPECTED_ARGUMENT, "term": m.term})
        if fields.get("transferId") != m.leader_id:
            return answer({"code": Code.INCONSISTENT_LEADER, "term": m.term})
        self.catching_up = (fields, answer, now.wall_ms + self.s.cfg.leadership_transfer_wait_timeout)
        return self._catch_up(now)

    def _catch_up(self, now: Now) -> list[Action]:
        if self.catching_up is None:
            return []
        fields, answer, deadline = self.catching_up
        if self.s.log.end_index < int_field(fields, "takeLeadershipLedgerIndex"):
            if now.wall_ms <= deadline:
                return [After(CATCH_UP_TIMER, CATCH_UP_POLL_MS)]
            self.catching_up = None
            return answer({"code": Code.TAKE_LEADERSHIP_FAILED, "term": self.s.member.term})
        self.catching_up = None
        return self._take(fields, answer, now)

    def _take(self, fields: dict[str, Any], answer: Answer, now: Now) -> list[Action]:
        """``handleTakeLeadership``: run for the next term at once; answer when it is decided."""
        m, el = self.s.member, self.s.elector
        term = int_field(fields, "term")
        if term != m.term:
            return answer({"code": Code.INCONSISTENT_TERM, "term": m.term})
        m.term_to_take_leadership = term + 1
        self.task = answer
        actions = el._to_candidate(term + 1, now)
        el.need_increase = True
        return actions + el.arm(now)

    def role_changed(self, term: int, role: Role) -> list[Action]:
        """``TakeLeadershipTask.check`` on every role change while a take-over is pending."""
        m = self.s.member
        target = m.term_to_take_leadership
        if target == -1 or self.task is None:
            return []
        if term > target:
            code = Code.EXPIRED_TERM
        elif term == target:
            if role is Role.CANDIDATE:
                return []
            code = Code.SUCCESS if role is Role.LEADER else Code.TAKE_LEADERSHIP_FAILED
        else:
            code = Code.TAKE_LEADERSHIP_FAILED if role is Role.FOLLOWER else Code.INTERNAL_ERROR
        answer, self.task = self.task, None
        m.term_to_take_leadership = -1
        return answer({"code": code, "term": term})
