"""The leader's side of replication: dledger 0.2.6's ``DLedgerEntryPusher`` (one ``EntryDispatcher``
a follower, and the ``QuorumAckChecker``), docs/rocketmq-model.md §8.2.

A dispatcher first finds where its follower's log agrees with the leader's (COMPARE from the
leader's last entry down), has the follower cut what follows (TRUNCATE), then pushes every
entry after it (APPEND), re-pushing one unanswered for 1 s and sending a bare COMMIT after 1 s
without a push. The quorum checker takes the index a majority holds (the watermarks, the
leader's own included) as committed -- whatever the entry's term: 0.2.6 has no current-term
rule -- answers the appends waiting up to it, and times out the rest after 2.5 s. None of it
runs on a member that is not leader: its waiting appends are then answered by nobody.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.roles.common.base import Action, After, Now
from rmqemu.emulator.roles.dledger.log import Entry
from rmqemu.emulator.roles.dledger.wire import Code, PushType, int_field

if TYPE_CHECKING:
    from rmqemu.emulator.roles.dledger.server import DLedgerServer

PUSH_TIMER, ACK_TIMER = "dledger:push", "dledger:ack"
AckCallback = Callable[[int, Now], list[Action]]  # the append's DLedger code, when it is known
MAX_PENDING = 1000  # EntryDispatcher.maxPendingSize
ERROR_PAUSE_MS = 500  # a dispatcher that failed sleeps this long, then compares again


@dataclass
class Dispatcher:
    peer: str
    type: str = PushType.COMPARE
    term: int = -1
    compare_index: int = -1
    write_index: int = -1
    pending: dict[int, float] = field(default_factory=dict)  # index -> wall ms pushed
    last_push_commit: float = -1.0
    last_check_leak: float = -1.0
    waiting: bool = False  # a COMPARE or TRUNCATE is in flight (DLedger waits for it, 3 s)
    paused_until: float = -1.0  # host-independent: cluster monotonic ms


@dataclass
class Waiting:
    term: int
    created: float  # wall ms (TimeoutFuture uses currentTimeMillis)
    done: AckCallback


class Pusher:
    def __init__(self, server: "DLedgerServer") -> None:
        self.s = server
        self.dispatchers = {p: Dispatcher(p) for p in server.cfg.others}
        self.watermarks: dict[str, int] = {}
        self.wm_term = -1
        self.waiting: dict[int, dict[int, Waiting]] = {}  # term -> index -> append
        self.last_quorum_index = -1
        self.last_check_leak = -1.0

    # ------------------------------------------------------------------ appends and their acks

    def watermark(self, term: int, peer: str) -> int:
        if term != self.wm_term:
            self.wm_term, self.watermarks = term, {p: -1 for p in self.s.cfg.peers}
        return self.watermarks[peer]

    def update_watermark(self, term: int, peer: str, index: int) -> None:
        if self.watermark(term, peer) < index:
            self.watermarks[peer] = index

    def wait_ack(self, entry: Entry, now: Now, done: AckCallback) -> list[Action]:
        self.update_watermark(entry.term, self.s.cfg.self_id, entry.index)
        self.waiting.setdefault(entry.term, {})[entry.index] = Waiting(entry.term, now.wall_ms, done)
        return self.wake(now)

    def pending_full(self, term: int) -> bool:
        return len(self.waiting.get(term, {})) > self.s.cfg.max_pending_requests_num

    def wake(self, now: Now) -> list[Action]:
        """Run every dispatcher and the quorum checker, then arm the next timer (leader only)."""
        if not self.s.is_leader:
            return []
        actions: list[Action] = []
        for d in self.dispatchers.values():
            actions += self._dispatch(d, now)
        return actions + self.check_quorum(now) + self._arm(now)

    def check_quorum(self, now: Now) -> list[Action]:
        s, term = self.s, self.s.member.term
        actions: list[Action] = []
        for old in [t for t in self.waiting if t != term]:
            for w in self.waiting.pop(old).values():
                actions += w.done(Code.TERM_CHANGED, now)
        self.watermark(term, s.cfg.self_id)
        marks = sorted(self.watermarks.values(), reverse=True)
        quorum_index = marks[len(marks) // 2]
        actions += s.commit(term, quorum_index, now)
        waiting = self.waiting.setdefault(term, {})
        acked, need_check = 0, False
        for i in range(quorum_index, self.last_quorum_index, -1):
            w = waiting.pop(i, None)
            if w is None:
                need_check = True
                break
            actions += w.done(Code.SUCCESS, now)
            acked += 1
        if acked == 0:
            i = quorum_index + 1
            while i in waiting and now.wall_ms - waiting[i].created >= s.cfg.max_wait_ack_time_ms:
                actions += waiting.pop(i).done(Code.WAIT_QUORUM_ACK_TIMEOUT, now)
                i += 1
        if now.wall_ms - self.last_check_leak > 1000 or need_check:
            self.update_watermark(term, s.cfg.self_id, s.log.end_index)
            for i in sorted(k for k in waiting if k < quorum_index):
                actions += waiting.pop(i).done(Code.SUCCESS, now)
            self.last_check_leak = now.wall_ms
        self.last_quorum_index = quorum_index
        return actions

    # ------------------------------------------------------------------ one dispatcher

    def _fresh(self, d: Dispatcher) -> bool:
        """``checkAndFreshState``: a new term starts over with COMPARE."""
        if not self.s.is_leader:
            return False
        if d.term != self.s.member.term:
            d.term = self.s.member.term
            self._change(d, -1, PushType.COMPARE)
        return True

    def _change(self, d: Dispatcher, index: int, target: str) -> None:
        if target == PushType.APPEND:
            d.compare_index = -1
            self.update_watermark(d.term, d.peer, index)
            d.write_index = index + 1
        elif target == PushType.COMPARE and d.type == PushType.APPEND:
            d.compare_index = -1
            d.pending.clear()
        elif target == PushType.TRUNCATE:
            d.compare_index = -1
        d.type = target

    def _dispatch(self, d: Dispatcher, now: Now) -> list[Action]:
        if not self._fresh(d) or d.waiting or now.mono_ms < d.paused_until:
            return []
        return self._append(d, now) if d.type == PushType.APPEND else self._compare(d, now)

    def _append(self, d: Dispatcher, now: Now) -> list[Action]:
        log, actions = self.s.log, []
        while d.type == PushType.APPEND:
            if d.write_index > log.end_index:
                return actions + self._commit_push(d, now) + self._check_append(d, now)
            if len(d.pending) >= MAX_PENDING or now.wall_ms - d.last_check_leak > 1000:
                mark = self.watermark(d.term, d.peer)
                d.pending = {i: t for i, t in d.pending.items() if i >= mark}
                d.last_check_leak = now.wall_ms
            if len(d.pending) >= MAX_PENDING:
                return actions + self._check_append(d, now)
            actions += self._push_entry(d, d.write_index, now)
            d.write_index += 1
        return actions

    def _push_entry(self, d: Dispatcher, index: int, now: Now) -> list[Action]:
        entry = self.s.log.get(index)
        if entry is None:
            return []
        d.pending[index] = now.wall_ms
        d.last_push_commit = now.wall_ms
        return self._push(d, PushType.APPEND, entry, lambda resp, n: self._on_appended(d, resp, n), now)

    def _on_appended(self, d: Dispatcher, resp: dict[str, Any] | None, now: Now) -> list[Action]:
        if resp is None:
            return []
        code = resp.get("code")
        if code == Code.SUCCESS:
            index = int_field(resp, "index")
            d.pending.pop(index, None)
            self.update_watermark(int_field(resp, "term"), d.peer, index)
            return self.wake(now)
        if code == Code.INCONSISTENT_STATE:
            self._change(d, -1, PushType.COMPARE)
            return self.wake(now)
        return []

    def _commit_push(self, d: Dispatcher, now: Now) -> list[Action]:
        if now.wall_ms - d.last_push_commit <= 1000:
            return []
        d.last_push_commit = now.wall_ms
        return self._push(d, PushType.COMMIT, None, lambda resp, n: [], now)

    def _check_append(self, d: Dispatcher, now: Now) -> list[Action]:
        index = self.watermark(d.term, d.peer) + 1
        sent = d.pending.get(index)
        if sent is not None and now.wall_ms - sent > self.s.cfg.max_push_time_out_ms:
            return self._push_entry(d, index, now)
        return []

    def _compare(self, d: Dispatcher, now: Now) -> list[Action]:
        log = self.s.log
        if d.compare_index == -1 and log.end_index == -1:
            return []
        if d.compare_index == -1 or not log.begin_index <= d.compare_index <= log.end_index:
            d.compare_index = log.end_index
        entry = log.get(d.compare_index)
        assert entry is not None
        d.waiting = True
        term = d.term
        return self._push(d, PushType.COMPARE, entry, lambda resp, n: self._on_compared(d, term, resp, n), now)

    def _on_compared(self, d: Dispatcher, term: int, resp: dict[str, Any] | None, now: Now) -> list[Action]:
        d.waiting = False
        if term != d.term or d.type not in (PushType.COMPARE, PushType.TRUNCATE):
            return self.wake(now)
        code = resp.get("code") if resp else None
        if code not in (Code.SUCCESS, Code.INCONSISTENT_STATE):
            return self._failed(d, now)
        assert resp is not None
        log, begin, end = self.s.log, int_field(resp, "beginIndex"), int_field(resp, "endIndex")
        truncate = -1
        if code == Code.SUCCESS:
            if d.compare_index == end:
                self._change(d, d.compare_index, PushType.APPEND)
                return self.wake(now)
            truncate = d.compare_index
        elif end < log.begin_index or begin > log.end_index or d.compare_index < begin:
            truncate = log.begin_index
        elif d.compare_index > end:
            d.compare_index = end
        else:
            d.compare_index -= 1
        if d.compare_index < log.begin_index:
            truncate = log.begin_index
        if truncate == -1:
            return self.wake(now)
        self._change(d, truncate, PushType.TRUNCATE)
        entry = log.get(truncate)
        assert entry is not None
        d.waiting = True
        term = d.term
        return self._push(d, PushType.TRUNCATE, entry, lambda r, n: self._on_truncated(d, term, truncate, r, n), now)

    def _on_truncated(self, d: Dispatcher, term: int, index: int, resp: dict[str, Any] | None,
                      now: Now) -> list[Action]:
        d.waiting = False
        if term != d.term or d.type != PushType.TRUNCATE:
            return self.wake(now)
        if resp is None or resp.get("code") != Code.SUCCESS:
            return self._failed(d, now)
        d.last_push_commit = now.wall_ms
        self._change(d, index, PushType.APPEND)
        return self.wake(now)

    def _failed(self, d: Dispatcher, now: Now) -> list[Action]:
        """``doWork``'s catch: back to COMPARE after a 500 ms sleep of this dispatcher."""
        self._change(d, -1, PushType.COMPARE)
        d.paused_until = now.mono_ms + ERROR_PAUSE_MS
        return [After(f"{PUSH_TIMER}:{d.peer}", ERROR_PAUSE_MS)]

    def _push(self, d: Dispatcher, kind: str, entry: Entry | None, cb: Any, now: Now) -> list[Action]:
        fields = {"leaderId": self.s.cfg.self_id, "term": d.term, "type": kind,
                  "commitIndex": self.s.log.committed_index}
        return self.s.send_push(d.peer, fields, entry, cb, now)

    # ------------------------------------------------------------------ timers

    def _arm(self, now: Now) -> list[Action]:
        """The next instant a dispatcher re-pushes, sends a COMMIT or an append times out."""
        due: list[float] = []
        for d in self.dispatchers.values():
            if d.type == PushType.APPEND and not d.waiting:
                due.append(d.last_push_commit + 1000)
                sent = d.pending.get(self.watermark(d.term, d.peer) + 1)
                if sent is not None:
                    due.append(sent + self.s.cfg.max_push_time_out_ms)
        waiting = self.waiting.get(self.s.member.term, {})
        if waiting:
            due.append(min(w.created for w in waiting.values()) + self.s.cfg.max_wait_ack_time_ms)
        due.append(self.last_check_leak + 1000)
        return [After(PUSH_TIMER, max(1.0, min(due) - now.wall_ms + 1))]
