"""Test helpers for driving a :class:`Role` without sockets or real clocks (reusable by anyone).

- :class:`FakeTime`: a monotonic clock plus a skewable wall clock (``bump`` moves only the wall).
- :class:`FakeStore`: the node's store dir as a dict; applies ``Persist`` / ``Append`` and serves
  as the ``read_store`` callable, so a test can "restart" a node over the same store.
- :class:`Driver`: wraps a role; records every action, keeps timers (``Every``/``After``/``Cancel``)
  and fires them as :meth:`Driver.advance` moves the clock, keeps pending ``Request``s so a test can
  :meth:`Driver.answer` them, and sends inbound frames with :meth:`Driver.call` / :meth:`Driver.send`.

Example::

    d = Driver(NameServer("namesrv-0", "127.0.0.1:9876"))
    d.start()
    resp = d.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from emulator.protocol import Flag, Frame, encode_body
from emulator.roles.base import (
    Action, After, Append, Cancel, ChannelEvent, CloseChannel, Emit, Every, Exit, Inbound, Now,
    Oneway, Persist, Reply, Request, Role,
)


@dataclass
class FakeTime:
    mono_ms: float = 0.0
    wall_offset_ms: float = 1_700_000_000_000.0

    @property
    def wall_ms(self) -> float:
        return self.mono_ms + self.wall_offset_ms

    def now(self) -> Now:
        return Now(mono_ms=self.mono_ms, wall_ms=self.wall_ms)

    def bump(self, ms: float) -> None:
        """Step the wall clock only (a ``clock: bump`` fault); schedules are unaffected."""
        self.wall_offset_ms += ms


@dataclass
class FakeStore:
    files: dict[str, str] = field(default_factory=dict)

    def __call__(self, relpath: str) -> str | None:
        return self.files.get(relpath)

    def apply(self, action: Action) -> None:
        if isinstance(action, Persist):
            self.files[action.relpath] = action.text
        elif isinstance(action, Append):
            self.files[action.relpath] = self.files.get(action.relpath, "") + "".join(
                line if line.endswith("\n") else line + "\n" for line in action.lines
            )


@dataclass
class _Timer:
    name: str
    due: float
    period: float | None


class Driver:
    def __init__(self, role: Role, time: FakeTime | None = None, store: FakeStore | None = None) -> None:
        self.role = role
        self.time = time or FakeTime()
        self.store = store if store is not None else FakeStore()
        self.actions: list[Action] = []
        self.pending: list[Request] = []
        self.timers: dict[str, _Timer] = {}
        self.closed_channels: list[str] = []
        self.exited: int | None = None
        self._opaque = itertools.count(1)

    # ------------------------------------------------------------------ recording

    def _take(self, actions: list[Action]) -> list[Action]:
        for a in actions:
            self.actions.append(a)
            self.store.apply(a)
            if isinstance(a, Request):
                self.pending.append(a)
            elif isinstance(a, Every):
                self.timers[a.name] = _Timer(a.name, self.time.mono_ms + a.initial_ms, a.period_ms)
            elif isinstance(a, After):
                self.timers[a.name] = _Timer(a.name, self.time.mono_ms + a.delay_ms, None)
            elif isinstance(a, Cancel):
                self.timers.pop(a.name, None)
            elif isinstance(a, CloseChannel):
                self.closed_channels.append(a.channel)
            elif isinstance(a, Exit):
                self.exited = a.code
        return actions

    def events(self, kind: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """Fields of the ``Emit``s recorded (optionally of one kind) from action index ``since``."""
        return [a.fields for a in self.actions[since:] if isinstance(a, Emit) and (kind is None or a.kind == kind)]

    def mark(self) -> int:
        """An index into :attr:`actions`, to look only at what happens after it."""
        return len(self.actions)

    # ------------------------------------------------------------------ driving

    def start(self) -> list[Action]:
        return self._take(self.role.start(self.time.now()))

    def stop(self) -> list[Action]:
        return self._take(self.role.stop(self.time.now()))

    def send(
        self, code: int, fields: dict[str, Any] | None = None, body: Any = None, *,
        channel: str = "ch-1", peer: str = "peer", oneway: bool = False,
    ) -> tuple[Frame | None, list[Action]]:
        """Deliver a request; returns (the response on ``channel`` with its opaque, all actions)."""
        opaque = next(self._opaque)
        frame = Frame(code=int(code), opaque=opaque, flag=Flag.ONEWAY if oneway else Flag.REQUEST,
                      fields=dict(fields or {}), body=encode_body(body))
        actions = self._take(self.role.on_message(Inbound(channel, peer, frame), self.time.now()))
        return self.response_in(actions, opaque, channel), actions

    def call(self, code: int, fields: dict[str, Any] | None = None, body: Any = None, **kw: Any) -> Frame | None:
        return self.send(code, fields, body, **kw)[0]

    @staticmethod
    def response_in(actions: list[Action], opaque: int, channel: str | None = None) -> Frame | None:
        for a in actions:
            if isinstance(a, Reply) and a.frame.is_response and a.frame.opaque == opaque:
                if channel is None or a.channel == channel:
                    return a.frame
        return None

    def timer(self, name: str) -> list[Action]:
        """Fire timer ``name`` now, regardless of its schedule."""
        return self._take(self.role.on_timer(name, self.time.now()))

    def channel(self, kind: str, channel: str) -> list[Action]:
        return self._take(self.role.on_channel(ChannelEvent(kind=kind, channel=channel), self.time.now()))  # type: ignore[arg-type]

    def advance(self, ms: float) -> list[Action]:
        """Move both clocks forward by ``ms``, firing due timers in due order (fixed rate)."""
        end = self.time.mono_ms + ms
        fired: list[Action] = []
        while True:
            due = [t for t in self.timers.values() if t.due <= end]
            if not due:
                break
            t = min(due, key=lambda x: x.due)
            self.time.mono_ms = max(self.time.mono_ms, t.due)
            if t.period is None:
                del self.timers[t.name]
            else:
                t.due += t.period
            fired += self._take(self.role.on_timer(t.name, self.time.now()))
        self.time.mono_ms = end
        return fired

    def answer(self, req: Request, response: Frame | None) -> list[Action]:
        """Run ``req.on_reply`` with ``response`` (None = timeout) and drop it from :attr:`pending`."""
        self.pending.remove(req)
        if response is not None and not response.is_response:
            response = Frame(code=response.code, opaque=0, flag=Flag.RESPONSE, remark=response.remark,
                             fields=response.fields, body=response.body)
        return self._take(req.on_reply(response, self.time.now()))

    def serve(self, action: Request | Oneway, *, channel: str, peer: str = "peer") -> Frame | None:
        """Deliver another driver's outbound ``Request``/``Oneway`` to this role as if over the
        wire; returns this role's response (None for a oneway or a held request)."""
        frame = action.frame
        if isinstance(action, Request):
            frame = Frame(code=frame.code, opaque=next(self._opaque), flag=Flag.REQUEST, remark=frame.remark,
                          fields=frame.fields, body=frame.body)
        return self.send(frame.code, frame.fields, frame.body, channel=channel, peer=peer,
                         oneway=isinstance(action, Oneway))[0]

    def pending_to(self, addr: str | None = None, code: int | None = None) -> list[Request]:
        return [r for r in self.pending if (addr is None or r.addr == addr) and (code is None or r.frame.code == code)]

    def replies(self, channel: str | None = None, since: int = 0) -> list[Reply]:
        return [a for a in self.actions[since:] if isinstance(a, Reply) and (channel is None or a.channel == channel)]

    def oneways(self, since: int = 0) -> list[Oneway]:
        return [a for a in self.actions[since:] if isinstance(a, Oneway)]


def response(code: int = 0, remark: str | None = None, fields: dict[str, Any] | None = None, body: Any = None) -> Frame:
    """A response frame for :meth:`Driver.answer`."""
    return Frame(code=int(code), flag=Flag.RESPONSE, remark=remark, fields=fields or {}, body=encode_body(body))
