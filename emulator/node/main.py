"""One node process: ``python -m rmqemu.emulator.node RUN_DIR NODE`` (the argv names the node in ``ps``).

Reads ``specs/<node>.json`` (written by the launcher) and, when the spec names a control endpoint,
its control key from stdin (one hex line the launcher writes into the pipe at spawn: the key is in
no file, see :mod:`emulator.transport._auth`), binds its transport, builds its role, says ready on
the control plane and runs the :class:`~emulator.node.runtime.Runtime` loop. SIGTERM and
SIGINT ask for a graceful stop (a broker unregisters from every namesrv, as ``shutdown()`` does);
the launcher's ``shutdown`` command does the same. Exit codes: 0 after a graceful stop, 2 for a
bad spec or a port it cannot bind, 3 when the launcher is gone, 4 when the role could not start.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from rmqemu.emulator.node.clock import ClusterTime, SkewableClock
from rmqemu.emulator.node.io import EventLog, StoreDir
from rmqemu.emulator.node.parent import die_with_launcher
from rmqemu.emulator.node.profiling import run_profiled
from rmqemu.emulator.node.runtime import EXIT_LAUNCHER_LOST, Runtime
from rmqemu.emulator.roles.common.node_spec import NodeSpec, remoting_host_port
from rmqemu.emulator.roles.registry import build_role
from rmqemu.emulator.transport.zmq_node import ZmqTransport

NETTY_IDLE_S = 120  # serverChannelMaxIdleTimeSeconds / clientChannelMaxIdleTimeSeconds (docs/rocketmq-model.md §1.5)
CONNECT_TIMEOUT_MS = 3000  # NettyClientConfig.connectTimeoutMillis
MIN_CONNECT_TIMEOUT_MS = 100.0  # wall: a local connect + handshake under load; scaled 30 ms is too tight
STOP_GRACE_MS = 2 * 6000  # cluster ms a graceful stop waits for its requests (the launcher waits as long) ...
MIN_STOP_GRACE_MS = 500.0  # ... but at least this many wall ms
GC_YOUNG_THRESHOLD = 20000  # allocations between young collections (CPython's default: 700)


def read_control_key(stream: BinaryIO) -> bytes:
    """The key line the launcher wrote to our stdin; ``ValueError`` if there is none."""
    line = stream.readline(256).strip()
    key = bytes.fromhex(line.decode("ascii"))
    if len(key) < 16:
        raise ValueError("no control key on stdin (the launcher writes one at spawn)")
    return key


def grpc_args(spec: NodeSpec) -> dict[str, Any]:
    """The transport's gRPC port arguments: where, and MessagingService's descriptor (passed in
    because the transport imports no role; the generated module is imported only by a node with
    the port, ~30 ms)."""
    if spec.grpc is None:
        return {}
    from rmqemu.emulator.roles.proxy import messaging_v2_pb2
    return {"grpc": remoting_host_port(spec.grpc),
            "grpc_service": messaging_v2_pb2.DESCRIPTOR.services_by_name["MessagingService"]}


def build(spec: NodeSpec, control_key: bytes = b"") -> Runtime:
    """Transport, role and runtime for a node spec (written by ``emulator.launcher.manifest.write_spec``).

    Every cluster duration the transport and the runtime need becomes host ms through the
    node's one :class:`ClusterTime`, the same object that gives the role its ``Now``."""
    cluster_time = ClusterTime(spec.scale, spec.anchor_ms, spec.min_request_timeout_wall_ms)
    idle_s = float(spec.config.get("serverChannelMaxIdleTimeSeconds", NETTY_IDLE_S))
    transport = ZmqTransport(
        spec.name, spec.port, idle_ms=cluster_time.host_ms(idle_s * 1000),
        heartbeat_ms=cluster_time.host_ms(NETTY_IDLE_S * 1000),
        connect_timeout_ms=cluster_time.host_ms(CONNECT_TIMEOUT_MS, MIN_CONNECT_TIMEOUT_MS), seed=spec.seed,
        control_endpoint=spec.control, control_key=control_key,
        remoting=remoting_host_port(spec.remoting) if spec.remoting is not None else None,
        **grpc_args(spec),
    )
    if transport.remoting_address is not None:  # the role learns the port actually bound
        spec = replace(spec, remoting=transport.remoting_address)
    if transport.grpc_address is not None:
        spec = replace(spec, grpc=transport.grpc_address)
    clock = SkewableClock()
    store = StoreDir(Path(spec.store_dir) if spec.store_dir else None)
    role = build_role(spec, transport.address, store.read)
    events = EventLog(Path(spec.events) if spec.events else None, spec.name, clock.now_ms, local_at=clock.at)
    fields: dict[str, Any] = {"pid": os.getpid(), "addr": transport.address}
    if transport.remoting_address is not None:
        fields["remoting_addr"] = transport.remoting_address
    if transport.grpc_address is not None:
        fields["grpc_addr"] = transport.grpc_address
    for key in ("broker", "broker_id", "group"):
        if getattr(spec, key) is not None:
            fields[key] = getattr(spec, key)
    return Runtime(role, transport, clock, events, store, start_fields=fields,
                   stop_grace_ms=cluster_time.host_ms(STOP_GRACE_MS, MIN_STOP_GRACE_MS), cluster_time=cluster_time)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m rmqemu.emulator.node RUN_DIR NODE", file=sys.stderr)
        return 2
    run_dir, name = Path(argv[0]), argv[1]
    if not die_with_launcher():
        print(f"{name}: its launcher is gone", file=sys.stderr)
        return EXIT_LAUNCHER_LOST
    try:
        spec = NodeSpec.read(run_dir / "specs" / f"{name}.json")
        key = read_control_key(sys.stdin.buffer) if spec.control else b""
    except (OSError, ValueError) as exc:
        print(f"{name}: cannot read its spec or control key: {exc}", file=sys.stderr)
        return 2
    try:
        runtime = build(spec, key)
    except OSError as exc:  # a fixed port taken, a store dir it cannot write: one line, no traceback
        print(f"{name}: cannot start: {exc}", file=sys.stderr)
        return 2
    # The modules and the role's tables built so far live as long as the process: move them out
    # of the cyclic collector's sight, and collect young objects less often (a node allocates a
    # few dicts per message, almost none of them in cycles).
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 20)
    rfd, wfd = os.pipe()
    os.set_blocking(rfd, False)
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)

    def ask_stop(_sig: int, _frame: object) -> None:
        runtime.stop_requested = True

    signal.signal(signal.SIGTERM, ask_stop)
    signal.signal(signal.SIGINT, ask_stop)
    runtime.watch_wake_fd(rfd)
    remoting, grpc = runtime.transport.remoting_address, runtime.transport.grpc_address
    runtime.transport.ready({"addr": runtime.transport.address, "pid": os.getpid(),
                             **({"remoting_addr": remoting} if remoting else {}),
                             **({"grpc_addr": grpc} if grpc else {})})
    try:
        return run_profiled(name, runtime.run)
    finally:
        runtime.events.close()
        runtime.store.close()
        runtime.transport.close()

