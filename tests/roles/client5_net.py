"""A whole RocketMQ 5 path under the fake runtime and clock (not a test module): emulated 5.x clients,
a proxy, a namesrv and brokers, every one a real role under its own :class:`.fakes.Driver`, joined
by :class:`Net`, a wire that carries every request, oneway and answer between them and moves the
one shared clock from due time to due time. It can kill a node (its driver dropped, its peers told
its channels closed, what was in flight to it answered by nothing), start a new one at the same
address, hold a client's receives back and lose a client's calls; tests/roles/test_client5_properties.py
plays random schedules over it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.protocol import Flag, Frame
from rmqemu.emulator.roles.common.base import Oneway, Reply, Request

from .fakes import Driver, FakeTime

#: what the wire does with one call: deliver it, keep it back for now, or lose the call or its answer
DELIVER, HOLD, LOSE_CALL, LOSE_ANSWER = "deliver", "hold", "lose_call", "lose_answer"
Gate = Callable[[Driver, Request], str]


@dataclass
class _InFlight:
    src: Driver
    req: Request
    target: Driver
    lose_answer: bool


@dataclass
class Net:
    time: FakeTime = field(default_factory=FakeTime)
    nodes: dict[str, Driver] = field(default_factory=dict)  # address -> the live node there
    every: list[Driver] = field(default_factory=list)  # every node that ever ran, dead ones too
    gate: Gate = lambda src, req: DELIVER  # noqa: E731 - the default: a healthy wire
    _cursor: dict[int, int] = field(default_factory=dict)
    _waiting: list[tuple[Driver, Request]] = field(default_factory=list)  # requests not delivered yet
    _inflight: dict[tuple[int, str, int], _InFlight] = field(default_factory=dict)  # (target, channel, opaque)
    _channels: dict[int, set[tuple[int, str]]] = field(default_factory=dict)  # src -> {(target, channel)}
    _incarnation: dict[int, int] = field(default_factory=dict)
    _opaques: Any = field(default_factory=lambda: itertools.count(1))
    #: per answer handed over: (src, the request, the answer frame, wall ms)
    answered: list[tuple[Driver, Request, Frame, float]] = field(default_factory=list)

    # ------------------------------------------------------------------ nodes

    def add(self, d: Driver, start: bool = True) -> Driver:
        self._incarnation[id(d)] = len(self.every)
        self.nodes[d.role.addr] = d
        self.every.append(d)
        self._cursor[id(d)] = len(d.actions)
        if start:
            d.start()
        self.pump()
        return d

    def alive(self, d: Driver) -> bool:
        return self.nodes.get(d.role.addr) is d

    def kill(self, addr: str) -> Driver:
        """The process at ``addr`` dies: no stop, its peers see its connections close, every call in
        flight to it fails, and what it had in flight elsewhere is answered to no one."""
        d = self.nodes.pop(addr)
        for target_id, channel in self._channels.pop(id(d), set()):
            target = next((n for n in self.nodes.values() if id(n) == target_id), None)
            if target is not None:
                target.channel("closed", channel)
        for key, f in list(self._inflight.items()):
            if f.target is d:
                del self._inflight[key]
                self._fail(f.src, f.req)
        self.pump()
        return d

    def _fail(self, src: Driver, req: Request) -> None:
        if self.alive(src) and self._is_pending(src, req):
            src.answer(req, None)  # the connection is gone: the caller hears at once

    @staticmethod
    def _is_pending(d: Driver, req: Request) -> bool:
        return any(p.request is req for p in d.runtime.pending.by_opaque.values())

    def _channel(self, src: Driver) -> str:
        return f"ch-{src.role.addr}#{self._incarnation[id(src)]}"

    # ------------------------------------------------------------------ the wire

    def pump(self, limit: int = 20_000) -> None:
        """Carry everything that can move now, until nothing does."""
        for _ in range(limit):
            if not self._round():
                return
        raise AssertionError("the wire never went quiet: a livelock between the roles")

    def _round(self) -> bool:
        moved = False
        for d in list(self.nodes.values()):
            if not self.alive(d):
                continue
            start = self._cursor[id(d)]
            self._cursor[id(d)] = len(d.actions)
            for a in d.actions[start:]:
                if isinstance(a, Request):
                    self._waiting.append((d, a))
                elif isinstance(a, Oneway):
                    target = self.nodes.get(a.addr)
                    if target is not None:
                        self._deliver(d, target, a.frame, Flag.ONEWAY)
                        moved = True
                elif isinstance(a, Reply) and a.frame.is_response:
                    moved = self._answer(d, a) or moved
        waiting, self._waiting = self._waiting, []
        for src, req in waiting:
            if not self.alive(src) or not self._is_pending(src, req):
                continue  # its caller died or gave up before it left
            verdict = self.gate(src, req)
            if verdict == HOLD:
                self._waiting.append((src, req))
                continue
            moved = True
            if verdict == LOSE_CALL:
                continue  # it times out at its caller
            target = self.nodes.get(req.addr)
            if target is None:
                self._fail(src, req)  # connection refused
                continue
            opaque = self._deliver(src, target, req.frame, Flag.REQUEST)
            self._inflight[(id(target), self._channel(src), opaque)] = _InFlight(src, req, target,
                                                                                 verdict == LOSE_ANSWER)
        return moved

    def _deliver(self, src: Driver, target: Driver, frame: Frame, flag: int) -> int:
        opaque = next(self._opaques)
        channel = self._channel(src)
        self._channels.setdefault(id(src), set()).add((id(target), channel))
        target.deliver(Frame(code=frame.code, opaque=opaque, flag=flag, remark=frame.remark, fields=frame.fields,
                             body=frame.body), channel=channel, peer=src.role.name, addr=src.role.addr)
        return opaque

    def _answer(self, target: Driver, reply: Reply) -> bool:
        f = self._inflight.pop((id(target), reply.channel, reply.frame.opaque), None)
        if f is None:
            return False
        if f.lose_answer or not self.alive(f.src) or not self._is_pending(f.src, f.req):
            return True
        self.answered.append((f.src, f.req, reply.frame, self.time.wall_ms))
        f.src.answer(f.req, reply.frame)
        return True

    # ------------------------------------------------------------------ time

    def advance(self, ms: float) -> None:
        """Move the shared clock ``ms`` on, waking each node at every due time of any of them (a
        timer, a request's deadline) and carrying what that sets moving."""
        end = self.time.mono_ms + ms
        self.pump()
        while True:
            dues = [due for d in self.nodes.values() if (due := d.runtime._next_due()) is not None]
            nxt = min(dues, default=end)
            if nxt > end:
                nxt = end
            self.time.mono_ms = max(self.time.mono_ms, nxt)
            for d in list(self.nodes.values()):
                if self.alive(d):
                    d._step()
            self.pump()
            if self.time.mono_ms >= end:
                return
            if nxt <= self.time.mono_ms and min((due for d in self.nodes.values()
                                                 if (due := d.runtime._next_due()) is not None),
                                                default=end) <= self.time.mono_ms:
                self.time.mono_ms += 1  # a due time a step did not consume: do not spin on it
