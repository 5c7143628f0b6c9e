"""How a real client on the remoting port is named: after its process, ``client@<pid>``.

The owner of a loopback connection's other end is found in two steps: the kernel's socket
diagnostics (netlink ``sock_diag``, what ``ss`` uses) give the inode of the client's socket in
one exact lookup by its four addresses; then ``/proc/<pid>/fd`` says which process holds that
inode, the owners of earlier connections asked first. Reading every socket of the host instead
(psutil's ``net_connections``, /proc/net/tcp) costs in proportion to the host's sockets, TIME_WAIT
ones included, which a busy test machine has by the thousand.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from typing import Callable, Iterable

Address = tuple[str, int]
_SOCK_DIAG, _BY_FAMILY, _F_REQUEST, _NOCOOKIE = 4, 20, 1, 0xFFFFFFFF  # linux/sock_diag.h, inet_diag.h
_INODE_AT = 16 + 68  # nlmsghdr, then inet_diag_msg's idiag_inode
_RECENT = 8


def socket_inode(local: Address, remote: Address) -> int | None:
    """The inode of the TCP socket whose own end is ``local`` and other end ``remote``, or None
    if the kernel has no such socket (closed since) or no sock_diag."""
    family = socket.AF_INET6 if ":" in local[0] else socket.AF_INET
    try:
        ends = b"".join(socket.inet_pton(family, ip).ljust(16, b"\0") for ip in (local[0], remote[0]))
        sockid = struct.pack(">HH", local[1], remote[1]) + ends + struct.pack("=III", 0, _NOCOOKIE, _NOCOOKIE)
        req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.send(struct.pack("=IHHII", 16 + len(req), _BY_FAMILY, _F_REQUEST, 1, 0) + req)
            answer = nl.recv(65536)
    except (OSError, ValueError):
        return None
    if len(answer) < _INODE_AT + 4 or struct.unpack_from("=H", answer, 4)[0] != _BY_FAMILY:
        return None  # NLMSG_ERROR: ENOENT when the socket is gone
    return struct.unpack_from("=I", answer, _INODE_AT)[0] or None


def inode_owner(inode: int, first: Iterable[int] = ()) -> int | None:
    """The process holding socket ``inode`` (the pids in ``first`` are asked first), or None."""
    target, asked = f"socket:[{inode}]", set()
    everyone = (int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in itertools.chain(first, everyone):
        if pid in asked:
            continue
        asked.add(pid)
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


def local_owner(peer: Address, server: Address, first: Iterable[int] = ()) -> int | None:
    """The pid of the local process whose socket ``peer`` is connected to our ``server`` end."""
    inode = socket_inode(peer, server)
    return inode_owner(inode, first) if inode is not None else None


class ClientNamer:
    """``client@<pid>`` for a local process, ``client@<ip>`` when its owner is not looked up.

    Lookups are budgeted in time: together they may take :data:`SHARE` of the node's time, at
    most :data:`BURST_S` at once, so a flood of connections cannot hold the node's loop (and with
    it the heartbeats it owes). An accept the budget leaves unlooked-up is named ``client@<ip>``."""

    SHARE, BURST_S = 0.05, 0.1

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 lookup: Callable[[Address, Address, Iterable[int]], int | None] = local_owner) -> None:
        self.clock = clock
        self.lookup = lookup
        self.budget, self.refilled = self.BURST_S, clock()
        self.recent: list[int] = []  # owners of the last connections, most recent first

    def __call__(self, peer: Address, server: Address) -> str:
        """The name of the client at ``peer`` that connected to our ``server`` address."""
        ip = peer[0]
        if not (ip.startswith("127.") or ip == "::1"):
            return f"client@{ip}"
        now = self.clock()
        self.budget = min(self.BURST_S, self.budget + (now - self.refilled) * self.SHARE)
        self.refilled = now
        if self.budget <= 0:
            return f"client@{ip}"
        pid = self.lookup((ip, peer[1]), (server[0], server[1]), self.recent)
        self.budget -= self.clock() - now
        if pid is None:
            return f"client@{ip}"
        self.recent = [pid, *(p for p in self.recent if p != pid)][:_RECENT]
        return f"client@{pid}"
