"""CPU and context switches per request/response through the real ZeroMQ transport.

    .venv/bin/python bench/transport_cost.py [--trips 5000] [--peers 30]

Why: bench/capacity.py measures what matters (a cluster's health), but on a shared 2-core host
its CPU per node moves by 10-20 % from run to run, more than one change to the transport saves.
This isolates the transport: two :class:`ZmqTransport` in one process (each with its own libzmq
I/O thread), one thread driving both through ``trips`` request/response round trips, one at a
time (each message is a wake-up of its own, the worst case). It reports process CPU (the loop
and both I/O threads) and context switches per round trip; ``--peers`` idle outbound connections
on the client make its poller as big as a client's of a 56-node cluster. CPU time, not wall
time: far less sensitive to other load (though not immune: caches are shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqemu.emulator.protocol import request  # noqa: E402
from rmqemu.emulator.transport.base import Received  # noqa: E402
from rmqemu.emulator.transport.zmq_node import ZmqTransport  # noqa: E402


def context_switches() -> int:
    """Voluntary and involuntary context switches of all this process's threads so far."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/status") as f:
            total += sum(int(line.split()[-1]) for line in f if "ctxt_switches" in line)
    return total


def wait_for(t: ZmqTransport, want: type, other: ZmqTransport) -> Received:
    """The next ``want`` event of ``t``; ``other`` is polled without waiting, so that its own
    work (a queued frame flushed once its connection is up) goes on."""
    while True:
        for ev in t.poll(1000):
            if isinstance(ev, want):
                return ev
        other.poll(0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trips", type=int, default=5000)
    parser.add_argument("--peers", type=int, default=30, help="idle outbound connections of the client")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server, client = ZmqTransport("server"), ZmqTransport("client")
    idle = [ZmqTransport(f"idle-{i}") for i in range(args.peers)]
    try:
        for peer in idle:  # connect the client to idle peers: more sockets in its poller
            client.send_to_addr(peer.address, request(34))
        frame = request(310, {"topic": "T", "queueId": 1, "bornTimestamp": 1}, body="x" * 200)
        for _ in range(50):  # warm-up: connection established, caches filled
            client.send_to_addr(server.address, frame)
            got = wait_for(server, Received, client)
            server.send_to_channel(got.channel, got.frame.response())
            wait_for(client, Received, server)
        for _ in range(args.rounds):
            cpu0, cs0 = time.process_time(), context_switches()
            for _ in range(args.trips):
                client.send_to_addr(server.address, frame)
                got = wait_for(server, Received, client)
                server.send_to_channel(got.channel, got.frame.response())
                wait_for(client, Received, server)
            cpu, cs = time.process_time() - cpu0, context_switches() - cs0
            print(f"{1e6 * cpu / args.trips:.1f} us CPU and {cs / args.trips:.2f} context switches per round trip "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for t in (server, client, *idle):
            t.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
