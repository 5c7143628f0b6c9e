"""Test helpers for driving a :class:`Role` through the REAL node runtime, without sockets or real clocks.

Only the transport and the clock are fake (locust's ``mocked_rpc()`` model); the loop that turns a
role's actions into timers, requests, replies and store writes is :class:`emulator.node.runtime.Runtime`
itself, so a test sees exactly what a node process does (skipped missed periods, request
deadlines, no inbound handling once stopping, ...), never a second implementation of it.

- :class:`FakeTime`: the fake host: a :class:`~emulator.node.clock.FakeClock` for monotonic time and
  a wall clock ``mono + offset`` (``bump`` moves only the wall). Several drivers may share one, as
  nodes share a host; any driver's :meth:`Driver.advance` moves it for all of them.
- Time units: roles speak cluster (RocketMQ) ms and the runtime's ``ClusterTime`` converts. A
  Driver runs at ``scale`` 1 unless told otherwise, so host ms *are* cluster ms and a test reads
  in RocketMQ's own numbers (``d.advance(30000)`` is the 30 s route poll, ``d.time.mono_ms += ...``
  and ``d.time.wall_ms`` too). With another ``scale``, :meth:`Driver.advance` still takes cluster
  ms, while :class:`FakeTime` stays host ms (that is where the wall-clock floors show).
- :class:`FakeStore`: the node's store as a dict, passed to the runtime as its store (``Persist`` /
  ``Append`` land in :attr:`FakeStore.files`); it is also the ``read_store`` callable, so a test
  can "restart" a node over the same store.
- :class:`Driver`: a role under a runtime over a :class:`~emulator.transport.fake.FakeTransport`.
  Inputs go in through the transport (:meth:`Driver.call` / :meth:`Driver.send` / :meth:`Driver.deliver`,
  :meth:`Driver.answer`, :meth:`Driver.channel`) followed by one non-blocking loop step;
  :meth:`Driver.advance` steps the loop while moving the fake clock, so timers and request
  timeouts come due as they would. Every action performed is recorded in :attr:`Driver.actions`.
  A role exception (which the runtime turns into a ``node.error`` event) fails the test.

Example::

    d = Driver(NameServer("namesrv-0", "127.0.0.1:9876"))
    d.start()
    resp = d.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.node.clock import ClockSetting, ClusterTime, FakeClock, SkewableClock
from rmqemu.emulator.node.io import EventLog
from rmqemu.emulator.node.runtime import Runtime
from rmqemu.emulator.node.timers import Timer
from rmqemu.emulator.protocol import ChannelEvent, Flag, Frame, encode_body
from rmqemu.emulator.roles.common.base import Action, Emit, Exit, Now, Oneway, Reply, Request, Role
from rmqemu.emulator.transport.base import Received, SendFailed, out_channel
from rmqemu.emulator.transport.fake import FakeTransport


class FakeTime:
    """The fake host clocks: monotonic ``mono_ms`` (settable) and wall ``mono_ms + wall_offset_ms``."""

    def __init__(self, mono_ms: float = 0.0, wall_offset_ms: float = 1_700_000_000_000.0) -> None:
        self.clock = FakeClock(mono_ms)
        self.wall_offset_ms = wall_offset_ms

    @property
    def mono_ms(self) -> float:
        return self.clock.current_ms

    @mono_ms.setter
    def mono_ms(self, value: float) -> None:
        self.clock.current_ms = value

    @property
    def wall_ms(self) -> float:
        return self.clock.current_ms + self.wall_offset_ms

    def host_wall(self) -> float:
        """The host wall clock, as the runtime's :class:`SkewableClock` reads it."""
        return self.wall_ms

    def bump(self, ms: float) -> None:
        """Step the wall clock only (a ``clock: bump`` fault); schedules are unaffected."""
        self.wall_offset_ms += ms


@dataclass
class FakeStore:
    """A node's store dir in memory, with :class:`~emulator.node.io.StoreDir`'s interface."""

    files: dict[str, str] = field(default_factory=dict)

    def __call__(self, relpath: str) -> str | None:
        return self.files.get(relpath)

    def read(self, relpath: str) -> str | None:
        return self.files.get(relpath)

    def persist(self, relpath: str, text: str) -> None:
        self.files[relpath] = text

    def append(self, relpath: str, lines: tuple[str, ...]) -> None:
        self.files[relpath] = self.files.get(relpath, "") + "".join(
            line if line.endswith("\n") else line + "\n" for line in lines)

    def close(self) -> None:
        pass


class RoleFailed(AssertionError):
    """The role raised while the runtime ran it (the traceback is in the captured stdout)."""


class _RecordingLog(EventLog):
    """The runtime's event log without a file: a role exception becomes a test failure."""

    def __init__(self, node: str, local_ms: Callable[[], float], host: Callable[[], float]) -> None:
        super().__init__(None, node, local_ms, host=host)
        self.errors: list[str] = []

    def write(self, kind: str, fields: dict[str, Any], node: str | None = None) -> dict[str, Any]:
        if kind == "node.error":
            self.errors.append(str(fields.get("error")))
        return super().write(kind, fields, node)


class Driver:
    def __init__(self, role: Role, time: FakeTime | None = None, store: FakeStore | None = None, *,
                 scale: float = 1.0, min_request_wall_ms: float = 0.0) -> None:
        self.role = role
        self.time = time or FakeTime()
        self.store = store if store is not None else FakeStore()
        self.actions: list[Action] = []
        self.exited: int | None = None
        self.transport = FakeTransport(name=role.name, addr=role.addr, clock=self.time.clock)
        clock = SkewableClock(host=self.time.host_wall)
        self.log = _RecordingLog(role.name, clock.now_ms, host=self.time.host_wall)
        self.cluster_time = ClusterTime(scale, min_request_wall_ms=min_request_wall_ms)
        self.runtime = Runtime(role, self.transport, clock, self.log, self.store, mono=self.time.clock,
                               observe=self._record, cluster_time=self.cluster_time)
        self._opaque = itertools.count(1)

    # ------------------------------------------------------------------ recording

    def _record(self, action: Action) -> None:
        self.actions.append(action)
        if isinstance(action, Exit):
            self.exited = action.code

    def _since(self, mark: int) -> list[Action]:
        if self.log.errors:
            raise RoleFailed(f"{self.role.name}: the role raised: {self.log.errors[0]}")
        return self.actions[mark:]

    def events(self, kind: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """Fields of the ``Emit``s recorded (optionally of one kind) from action index ``since``."""
        return [a.fields for a in self.actions[since:] if isinstance(a, Emit) and (kind is None or a.kind == kind)]

    def mark(self) -> int:
        """An index into :attr:`actions`, to look only at what happens after it."""
        return len(self.actions)

    @property
    def pending(self) -> list[Request]:
        """Requests on the wire, oldest first (the runtime's own table)."""
        return [p.request for p in self.runtime.pending.by_opaque.values()]

    @property
    def timers(self) -> dict[str, Timer]:
        """The runtime's timers by name (``due`` and ``period`` in host monotonic ms)."""
        return self.runtime.timers.entries

    def now(self) -> Now:
        """What the role would be handed now (cluster ms)."""
        return self.runtime.now()

    @property
    def closed_channels(self) -> list[str]:
        return list(self.transport.closed)

    # ------------------------------------------------------------------ driving

    def _step(self) -> list[Action]:
        """One loop iteration without moving the clock: handles what the transport holds."""
        mark = self.mark()
        self.runtime.step(max_wait_ms=0)
        return self._since(mark)

    def start(self) -> list[Action]:
        mark = self.mark()
        self.runtime.start()
        return self._since(mark)

    def stop(self) -> list[Action]:
        """A graceful stop (the launcher's ``shutdown``): the role's ``stop`` actions; from now on
        the runtime ignores inbound requests and fires no timers, but still takes responses."""
        mark = self.mark()
        self.runtime.begin_stop()
        return self._since(mark)

    def run(self, fn: Callable[[Now], list[Action]]) -> list[Action]:
        """Run a role entry point the loop has no input for (e.g. ``Producer.send``) through the runtime."""
        mark = self.mark()
        self.runtime.invoke(fn)
        return self._since(mark)

    def deliver(self, frame: Frame, *, channel: str = "ch-1", peer: str = "peer",
                addr: str | None = None) -> list[Action]:
        """A frame arriving on inbound ``channel`` exactly as given (the test chose its opaque);
        ``addr``: the peer's socket address, as the remoting port gives a real client's."""
        self.transport.deliver(frame, channel=channel, peer=peer, addr=addr)
        return self._step()

    def send(
        self, code: int, fields: dict[str, Any] | None = None, body: Any = None, *,
        channel: str = "ch-1", peer: str = "peer", oneway: bool = False,
    ) -> tuple[Frame | None, list[Action]]:
        """Deliver a request; returns (the response on ``channel`` with its opaque, all actions)."""
        opaque = next(self._opaque)
        frame = Frame(code=int(code), opaque=opaque, flag=Flag.ONEWAY if oneway else Flag.REQUEST,
                      fields=dict(fields or {}), body=encode_body(body))
        actions = self.deliver(frame, channel=channel, peer=peer)
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
        """Fire timer ``name`` now, regardless of its schedule (which stays as it was)."""
        return self.run(lambda now: self.role.on_timer(name, now))

    def set_clock(self, **setting: float) -> list[Action]:
        """A ``clock`` fault's control command (``offset_ms``, ``drift_ppm``, ...): the node's
        skewable wall clock takes the setting and the role hears of it (``Role.on_clock``)."""
        mark = self.mark()
        self.transport.command("set_clock", "clock", setting=ClockSetting(**setting).to_dict())
        self.runtime.step(max_wait_ms=0)
        return self._since(mark)

    def channel(self, kind: str, channel: str | None = None, *, addr: str | None = None) -> list[Action]:
        """A connection event: server side names the ``channel``, client side the peer ``addr``."""
        self.transport.push(ChannelEvent(kind=kind, channel=channel, addr=addr))  # type: ignore[arg-type]
        return self._step()

    def advance(self, ms: float) -> list[Action]:
        """Move the clock forward by ``ms`` cluster ms (monotonic and wall), running the loop
        meanwhile: due timers fire at their due times and unanswered requests time out, as in a node."""
        end = self.time.mono_ms + self.cluster_time.host_ms(ms)
        mark = self.mark()
        while True:
            self.runtime.step(max_wait_ms=max(0.0, end - self.time.mono_ms))
            if self.time.mono_ms >= end or self.runtime.exit_code is not None:
                break
        self.time.mono_ms = max(self.time.mono_ms, end)
        return self._since(mark)

    def _opaque_of(self, req: Request) -> int:
        for opaque, pending in self.runtime.pending.by_opaque.items():
            if pending.request is req:
                return opaque
        raise ValueError(f"{self.role.name}: request {req.frame.code} to {req.addr} is not pending")

    def answer(self, req: Request, response: Frame | None) -> list[Action]:
        """Answer a pending request over the transport; ``None`` means no answer (a connection
        failure, which the runtime reports to ``on_reply`` as ``None`` like a timeout, without
        moving the clock)."""
        opaque = self._opaque_of(req)
        if response is None:
            self.transport.push(SendFailed(req.addr, req.frame.with_opaque(opaque), "no answer (test)"))
        else:
            frame = Frame(code=response.code, opaque=opaque, flag=Flag.RESPONSE, remark=response.remark,
                          fields=response.fields, body=response.body)
            self.transport.push(Received(out_channel(req.addr), req.addr, frame, outbound=True, addr=req.addr))
        return self._step()

    def serve(self, action: Request | Oneway, *, channel: str, peer: str = "peer") -> Frame | None:
        """Deliver another driver's outbound ``Request``/``Oneway`` to this role as if over the
        wire; returns this role's response (None for a oneway or a held request)."""
        frame = action.frame
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
