"""The follower's side of replication: dledger 0.2.6's ``EntryHandler`` (docs/rocketmq-model.md §8.2).

Pushes are taken in any role but worked on only as a follower, in DLedger's order: COMPARE,
TRUNCATE and COMMIT first, in arrival order (a COMPARE or TRUNCATE drops every APPEND waiting),
then the APPEND for the index after our last entry. An APPEND or TRUNCATE is refused unless it
is of our term and from our leader; a COMPARE only compares. An APPEND waiting past our end for
1 s is answered INCONSISTENT_STATE, which sends the leader back to COMPARE.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.roles.common.base import Action, After, Now
from rmqemu.emulator.roles.dledger.log import Entry
from rmqemu.emulator.roles.dledger.member import Role
from rmqemu.emulator.roles.dledger.wire import Code, PushType, int_field

if TYPE_CHECKING:
    from rmqemu.emulator.roles.dledger.server import DLedgerServer

HANDLER_TIMER = "dledger:handler"
PUSH_WAIT_MS = 1000  # EntryHandler.handlePush: new TimeoutFuture<>(1000)
MAX_QUEUED = 100  # the compare-or-truncate queue's capacity
Answer = Callable[[dict[str, Any]], list[Action]]


@dataclass
class Push:
    fields: dict[str, Any]
    entry: Entry | None
    answer: Answer
    received: float  # wall ms

    @property
    def kind(self) -> str:
        return str(self.fields.get("type"))


class EntryHandler:
    def __init__(self, server: "DLedgerServer") -> None:
        self.s = server
        self.appends: dict[int, Push] = {}
        self.queue: deque[Push] = deque()
        self.last_check = -1.0
        self.timer_armed = False

    def on_push(self, push: Push, now: Now) -> list[Action]:
        if push.kind == PushType.APPEND:
            if push.entry is None:
                return push.answer(self._answer(push, Code.UNEXPECTED_ARGUMENT))
            if push.entry.index in self.appends:
                return push.answer(self._answer(push, Code.REPEATED_PUSH))
            self.appends[push.entry.index] = push
        elif push.kind == PushType.COMMIT:
            if len(self.queue) < MAX_QUEUED:
                self.queue.append(push)
        elif push.kind in (PushType.COMPARE, PushType.TRUNCATE) and push.entry is not None:
            self.appends.clear()
            if len(self.queue) < MAX_QUEUED:
                self.queue.append(push)
        else:
            return push.answer(self._answer(push, Code.UNEXPECTED_ARGUMENT))
        return self.work(now)

    def work(self, now: Now) -> list[Action]:
        """Handle what can be handled now (nothing unless a follower)."""
        actions: list[Action] = []
        while self.s.member.role is Role.FOLLOWER:
            if self.queue:
                actions += self._one(self.queue.popleft(), now)
                continue
            push = self.appends.pop(self.s.log.end_index + 1, None)
            if push is None:
                break
            actions += self._append(push, now)
        if self.appends and not self.timer_armed:  # never pushed back by the pushes that keep coming
            self.timer_armed = True
            actions.append(After(HANDLER_TIMER, PUSH_WAIT_MS))
        return actions

    def on_timer(self, now: Now) -> list[Action]:
        """``checkAbnormalFuture``: answer what waits at or below our end, and the lowest one
        waiting past a gap for longer than 1 s (INCONSISTENT_STATE: the leader compares again)."""
        self.timer_armed = False
        if self.s.member.role is not Role.FOLLOWER or now.wall_ms - self.last_check < PUSH_WAIT_MS:
            return self.work(now) if self.appends else []
        self.last_check = now.wall_ms
        log, actions = self.s.log, []
        end = log.end_index
        for index in sorted(self.appends):
            push = self.appends[index]
            if index <= end:
                del self.appends[index]
                same = push.entry is not None and log.get(index) == push.entry
                actions += push.answer(self._answer(push, Code.SUCCESS if same else Code.INCONSISTENT_STATE))
        if end + 1 not in self.appends:
            late = [i for i, p in self.appends.items() if now.wall_ms - p.received >= PUSH_WAIT_MS]
            if late:
                push = self.appends[min(late)]
                actions += push.answer(self._answer(push, Code.INCONSISTENT_STATE))
        return actions + self.work(now)

    # ------------------------------------------------------------------ one request

    def _one(self, push: Push, now: Now) -> list[Action]:
        if push.kind == PushType.COMMIT:
            actions = self.s.commit(int_field(push.fields, "term"), int_field(push.fields, "commitIndex"), now)
            return actions + push.answer(self._answer(push, Code.SUCCESS))
        assert push.entry is not None
        if push.kind == PushType.COMPARE:
            same = self.s.log.get(push.entry.index) == push.entry
            return push.answer(self._answer(push, Code.SUCCESS if same else Code.INCONSISTENT_STATE))
        if not self._from_our_leader(push) or push.entry.index > self.s.log.end_index + 1:
            return push.answer(self._answer(push, Code.INCONSISTENT_STATE))
        actions = self.s.truncate(push.entry, now)
        actions += push.answer(self._answer(push, Code.SUCCESS))
        return actions + self.s.commit(int_field(push.fields, "term"), int_field(push.fields, "commitIndex"), now)

    def _append(self, push: Push, now: Now) -> list[Action]:
        assert push.entry is not None
        if not self._from_our_leader(push):
            return push.answer(self._answer(push, Code.INCONSISTENT_STATE))
        actions = self.s.append_as_follower(push.entry, now)
        actions += push.answer(self._answer(push, Code.SUCCESS))
        return actions + self.s.commit(int_field(push.fields, "term"), int_field(push.fields, "commitIndex"), now)

    def _from_our_leader(self, push: Push) -> bool:
        m = self.s.member
        return int_field(push.fields, "term") == m.term and push.fields.get("leaderId") == m.leader_id

    def _answer(self, push: Push, code: int) -> dict[str, Any]:
        log = self.s.log
        out: dict[str, Any] = {"code": int(code), "term": int_field(push.fields, "term"),
                               "beginIndex": log.begin_index, "endIndex": log.end_index}
        if push.kind != PushType.COMMIT and push.entry is not None:
            out["index"] = push.entry.index
        return out
