"""Waiting for input on many zmq sockets at a cost that does not grow with their number.

``zmq.Poller.poll`` hands every registered socket to ``zmq_poll`` on every call, which asks each
for ``ZMQ_EVENTS`` and ``poll(2)``s all their descriptors: measured here, one 1 ms wait cost 51 us
of CPU with one socket and 181 us with 61 (a client of a 56-node cluster: a DEALER and a monitor
per peer), and a node waits a hundred times a second. This waits with ``epoll`` on each socket's
``ZMQ_FD`` instead (registered once), and asks ``ZMQ_EVENTS`` only of the sockets the caller sent
on since the last wait: 43 us for the same 61. A socket whose descriptor fired is returned
without asking (it *may* have input: the signal can also be another command), because every
reader of the transport drains its socket in a loop that asks ``ZMQ_EVENTS`` anyway; asking
twice was one more ``getsockopt`` (an enum lookup in pyzmq, a ``process_commands`` in libzmq)
per socket and wake-up.

``ZMQ_FD`` is not a data descriptor: it signals that the socket has commands to process, and a
``send``/``recv`` on the socket may process them (and the signal) while leaving messages
readable. So a socket must be re-checked after the caller sends on it (:meth:`touched`); the
sockets the caller reads it drains completely, so their readiness is known. This is how pyzmq's
own event-loop integration uses the descriptor.
"""

from __future__ import annotations

import select
from typing import Union

import zmq

_EVENTS, _POLLIN, _FD = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.FD)
Pollable = Union[zmq.Socket, int]


class EpollPoller:
    """The subset of :class:`zmq.Poller` the transport uses (POLLIN only), over epoll; a socket it
    returns may turn out to have nothing to read (see the module docstring)."""

    def __init__(self) -> None:
        self.epoll = select.epoll()
        self.by_fd: dict[int, Pollable] = {}
        self.fd_of: dict[Pollable, int] = {}
        self.check: set[zmq.Socket] = set()  # re-checked before the next wait

    def register(self, item: Pollable, _flags: int = _POLLIN) -> None:
        fd = item.getsockopt(_FD) if isinstance(item, zmq.Socket) else int(item)
        self.by_fd[fd] = item
        self.fd_of[item] = fd
        self.epoll.register(fd, select.EPOLLIN)
        if isinstance(item, zmq.Socket):
            self.check.add(item)  # whatever it holds already must not wait for a signal

    def unregister(self, item: Pollable) -> None:
        fd = self.fd_of.pop(item, None)
        if fd is not None:
            self.by_fd.pop(fd, None)
            self.epoll.unregister(fd)
        self.check.discard(item)  # type: ignore[arg-type]

    def want_write(self, fd: int, on: bool) -> None:
        """Also wake when the plain descriptor ``fd`` can take output (a TCP socket whose peer has
        not read what we sent yet); ``poll`` then returns its epoll mask."""
        self.epoll.modify(fd, select.EPOLLIN | select.EPOLLOUT if on else select.EPOLLIN)

    def touched(self, sock: zmq.Socket) -> None:
        """The caller sent on ``sock``: look at it again before the next wait."""
        self.check.add(sock)

    def poll(self, timeout_ms: float) -> list[tuple[Pollable, int]]:
        """The registered items that have or may have input (with the epoll mask of a plain
        descriptor), waiting up to ``timeout_ms`` for one."""
        ready: dict[Pollable, int] = {}
        for sock in self.check:
            if sock.getsockopt(_EVENTS) & _POLLIN:
                ready[sock] = _POLLIN
        self.check = set()
        for fd, mask in self.epoll.poll(0 if ready else max(0.0, timeout_ms) / 1000.0):
            item = self.by_fd.get(fd)
            if item is not None:
                ready[item] = mask
        return list(ready.items())

    def close(self) -> None:
        self.epoll.close()
