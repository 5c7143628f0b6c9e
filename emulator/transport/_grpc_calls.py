"""The node thread's side of the gRPC port (:mod:`._grpc`): calls as channels, and the hand-over.

The gRPC server runs on its own thread (an asyncio loop); what it receives crosses to the node's
loop through a :class:`Mailbox`, a deque plus an eventfd that the transport's poller watches. The
eventfd is written only when the mailbox goes from "drained" to "not drained", so a burst of
messages costs one ``write(2)`` and one wake-up, not one per message. Here, on the node thread,
every message becomes a :class:`Received` on its call's channel ``grpc:<n>`` after the link
faults of its sender (applied on arrival, as for a remoting client), and a call that ended on the
client's side becomes a ``closed`` event. No grpc import here: this is plain bookkeeping.

Each counter of a :class:`Call` is written by one thread only (``in_*`` and ``written_bytes`` by
the gRPC thread, ``taken_*`` and ``out_bytes`` by the node thread), so their differences (what one
side handed over and the other has not taken yet) need no lock.
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.node.links import Delivery
from rmqemu.emulator.protocol import ChannelEvent, EmulatorCode, Flag, Frame
from rmqemu.emulator.transport._client_names import Address, ClientNamer
from rmqemu.emulator.transport.base import Received, TransportEvent

MAX_TAKE_PER_POLL = 512  # messages one poll hands on; the rest wait for the next (the loop's timers run between)
GRPC_CODE = int(EmulatorCode.GRPC)


@dataclass(eq=False)
class Call:
    """One gRPC call: the channel ``grpc:<n>`` a role sees."""

    channel: str
    fields: dict[str, Any]  # method and the call's x-mq-* metadata, copied into each frame
    addr: Address  # the client's socket address
    streams_out: bool  # server streaming: stays open after a response
    streams_in: bool  # client streaming
    handle: Any = None  # the gRPC thread's state of the call (:class:`._grpc.CallIO`)
    # written on the gRPC thread only
    in_msgs: int = 0  # messages received: the n-th has opaque n
    in_bytes: int = 0  # of those handed to the node thread
    written_bytes: int = 0  # responses written to grpc
    over: bool = False  # the call has ended on the gRPC thread (sends are refused from then on)
    # written on the node thread only
    taken_msgs: int = 0
    taken_bytes: int = 0
    out_bytes: int = 0  # responses handed to the gRPC thread
    peer: str | None = None
    finished: bool = False  # ended by the role or the transport: sends are refused
    by_role: bool = False  # ended by the role (a reply with end, the unary reply, close_channel): no closed event

    @property
    def addr_text(self) -> str:
        return f"{self.addr[0]}:{self.addr[1]}"


@dataclass
class Mailbox:
    """Items from the gRPC thread to the node thread; :attr:`fd` is readable when there are some."""

    items: deque = field(default_factory=deque)
    fd: int = field(default_factory=lambda: os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))
    signalled: bool = False

    def put(self, item: tuple[Call, int, bytes | None]) -> None:
        """Any thread: queue ``item`` and make :attr:`fd` readable unless it already is."""
        self.items.append(item)
        if not self.signalled:
            self.signalled = True
            os.eventfd_write(self.fd, 1)

    def take(self, limit: int) -> list[tuple[Call, int, bytes | None]]:
        """Node thread: up to ``limit`` items. The fd is cleared before the flag and the flag before
        the items are read, so an item put meanwhile either is read now or signals again."""
        try:
            os.eventfd_read(self.fd)
        except BlockingIOError:
            pass
        self.signalled = False
        items = self.items
        return [items.popleft() for _ in range(min(limit, len(items)))]

    def close(self) -> None:
        os.close(self.fd)
        self.fd = -1


class CallTable:
    """The open calls the node thread knows, their clients' names and the delayed messages.

    ``shape(peer)`` is the link fault on what ``peer`` sends us; ``server`` is the port's bound
    address (the namer looks a loopback client up by its four addresses)."""

    def __init__(self, mailbox: Mailbox, shape: Callable[[str], Delivery], counters: dict[str, int],
                 server: Address, namer: Callable[[Address, Address], str] | None = None) -> None:
        self.mailbox = mailbox
        self.shape = shape
        self.counters = counters
        self.server = server
        self.namer = namer or ClientNamer()
        self.by_channel: dict[str, Call] = {}
        self.names: dict[Address, list] = {}  # client address -> [name, open calls]: looked up once per connection
        self.delayed: list[tuple[float, int, Received]] = []  # (due, seq, event) heap
        self.taken_bytes = 0  # all calls' bytes taken (the gRPC thread counts what it handed over)
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self.by_channel)

    def service(self, now: float, out: list[TransportEvent]) -> None:
        """Hand on what the gRPC thread delivered (at most :data:`MAX_TAKE_PER_POLL` items)."""
        for call, opaque, body in self.mailbox.take(MAX_TAKE_PER_POLL):
            if body is None:
                self._gone(call, out)
                continue
            call.taken_msgs += 1
            call.taken_bytes += len(body)
            self.taken_bytes += len(body)
            if call.peer is None:
                self._open(call)
            if call.finished:  # the role or the transport ended it: what was on its way is void
                continue
            decision = self.shape(call.peer)  # type: ignore[arg-type]
            if decision.dropped:
                self.counters["dropped_in"] += 1
                continue
            self.counters["received"] += 1
            frame = Frame(GRPC_CODE, opaque, Flag.REQUEST, None, dict(call.fields), body)
            event = Received(call.channel, call.peer, frame, addr=call.addr_text)  # type: ignore[arg-type]
            for _ in range(decision.copies):
                if decision.delay_ms > 0:
                    heapq.heappush(self.delayed, (now + decision.delay_ms, next(self._seq), event))
                else:
                    out.append(event)
            self.counters["delayed"] += decision.delay_ms > 0
            self.counters["duplicated"] += decision.copies > 1

    def backlog(self) -> bool:
        """Items are waiting that the last poll left (its share was used up)."""
        return bool(self.mailbox.items)

    def _open(self, call: Call) -> None:
        entry = self.names.get(call.addr)
        if entry is None:
            entry = self.names[call.addr] = [self.namer(call.addr, self.server), 0]
        entry[1] += 1
        call.peer = entry[0]
        self.by_channel[call.channel] = call
        self.counters["grpc_calls"] += 1

    def _gone(self, call: Call, out: list[TransportEvent]) -> None:
        """The call is over on the gRPC side; report it unless the role ended it."""
        if self.by_channel.pop(call.channel, None) is None:
            return  # none of its messages reached this thread: the role never saw the channel
        entry = self.names[call.addr]
        entry[1] -= 1
        if entry[1] == 0:  # its port may be another process's next: name it afresh then
            del self.names[call.addr]
        call.finished = True
        if not call.by_role:
            out.append(ChannelEvent(kind="closed", channel=call.channel, peer=call.peer))

    def next_due(self) -> float | None:
        return self.delayed[0][0] if self.delayed else None

    def flush(self, now: float, out: list[TransportEvent]) -> None:
        """Hand on the delayed messages that are due (unless their call has ended meanwhile)."""
        while self.delayed and self.delayed[0][0] <= now:
            event = heapq.heappop(self.delayed)[2]
            if event.channel in self.by_channel and not self.by_channel[event.channel].finished:
                out.append(event)

    def live(self, channel: str) -> Call | None:
        """The call a send on ``channel`` may go to: known, and ended on neither side."""
        call = self.by_channel.get(channel)
        return call if call is not None and not call.finished and not call.over else None

    def peer_of(self, channel: str) -> str | None:
        call = self.by_channel.get(channel)
        return call.peer if call is not None else None

    def clients(self) -> dict[str, str]:
        """channel -> client name, for the ``state`` command."""
        return {c: call.peer for c, call in sorted(self.by_channel.items()) if call.peer is not None}
