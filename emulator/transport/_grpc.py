"""The gRPC port: RocketMQ 5 clients' ``MessagingService`` calls, beside ZeroMQ (docs/design.md §2).

A node with a gRPC port serves every method of the service it is given (a protobuf
``ServiceDescriptor``: only names and streaming kinds are read) with raw bytes: no (de)serializer,
the transport never parses protobuf. Each call is a channel ``grpc:<n>``; each message the client
writes is a :class:`Received` frame of code ``EmulatorCode.GRPC`` whose ``opaque`` counts the
call's messages from 1 (:mod:`._grpc_calls` does that part on the node thread).

grpc.aio runs on one daemon thread with its own asyncio loop: an open stream costs a task, not a
thread, so a thousand clients each holding a Telemetry stream cost a thousand tasks. Inbound
messages cross to the node loop through :class:`~._grpc_calls.Mailbox` (an eventfd the poller
watches); outbound frames go to the call's asyncio queue through ``call_soon_threadsafe``. The
node thread never waits on grpc, and no role code runs on the gRPC thread.

Hostile input ends its own call with RESOURCE_EXHAUSTED: a message over :data:`MAX_MESSAGE_BYTES`
(grpc refuses it before buffering), a client stream over :data:`STREAM_RATE` messages a second or
:data:`MAX_PENDING_IN_BYTES` the node has not taken, or answers the client does not read
(:data:`MAX_PENDING_OUT_BYTES`). Calls beyond :data:`MAX_CALLS` are refused by grpc itself.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
import time
import urllib.parse
from typing import Any, Callable

import grpc
from grpc import aio

from rmqemu.emulator.node.links import Delivery
from rmqemu.emulator.protocol import Frame
from rmqemu.emulator.protocol.frame import GRPC_PREFIX
from rmqemu.emulator.transport._client_names import Address
from rmqemu.emulator.transport._grpc_calls import Call, CallTable, Mailbox
from rmqemu.emulator.transport.base import TransportEvent

# One SendMessageRequest: the 5.x clients send one message per request with a body of at most
# 4 MiB (publishing.max_body_size); 1 MiB more covers its properties, keys, topic and framing.
MAX_MESSAGE_BYTES = 5 * 1024 * 1024
MAX_CALLS = 2048  # open calls: a client holds a Telemetry stream and a few long polls
MAX_STREAMS_PER_CONN = 256  # SETTINGS_MAX_CONCURRENT_STREAMS: a PushConsumer polls each queue at once
STREAM_RATE = 1000.0  # messages a second on one client stream (a real Telemetry writes one per 300 s) ...
STREAM_BURST = 1000.0  # ... after a burst of this many
MAX_PENDING_IN_MSGS = 1024  # a call's messages the node has not taken yet
MAX_PENDING_IN_BYTES = 16 * 1024 * 1024  # ... their bytes (three largest messages and then some)
MAX_PENDING_IN_TOTAL = 64 * 1024 * 1024  # every call's together
MAX_PENDING_OUT_BYTES = 64 * 1024 * 1024  # answers a client has not read, as on the remoting port
START_TIMEOUT_S, STOP_TIMEOUT_S = 30.0, 5.0
STOP_GRACE_S = 1.0  # for the calls ended at close to send their status, then grpc cancels what is left
FIELD_HEADERS = (("client_id", "x-mq-client-id"), ("language", "x-mq-language"),
                 ("version", "x-mq-client-version"), ("namespace", "x-mq-namespace"))
OK, EXHAUSTED = grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED
_MAKERS = {(False, False): grpc.unary_unary_rpc_method_handler, (False, True): grpc.unary_stream_rpc_method_handler,
           (True, False): grpc.stream_unary_rpc_method_handler, (True, True): grpc.stream_stream_rpc_method_handler}


def methods_of(service: Any) -> dict[str, tuple[bool, bool]]:
    """``{name: (client_streaming, server_streaming)}`` of a protobuf ``ServiceDescriptor``."""
    return {m.name: (bool(m.client_streaming), bool(m.server_streaming)) for m in service.methods}


def peer_address(peer: str) -> Address:
    """``("127.0.0.1", 5555)`` from grpc's ``ipv4:127.0.0.1:5555`` (``ipv6:%5B::1%5D:5555``)."""
    rest = urllib.parse.unquote(peer.partition(":")[2])
    host, _, port = rest.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else 0


class CallIO:
    """A call's state on the gRPC thread: its answers waiting to be written, and how it ended."""

    def __init__(self) -> None:
        self.outq: asyncio.Queue[tuple[bytes, bool]] = asyncio.Queue()
        self.done: asyncio.Future[tuple[grpc.StatusCode, Any]] = asyncio.get_running_loop().create_future()
        self.tokens, self.refilled = STREAM_BURST, time.monotonic()

    def finish(self, code: grpc.StatusCode, payload: Any = None) -> None:
        if not self.done.done():
            self.done.set_result((code, payload))

    def push(self, body: bytes, end: bool) -> None:
        """A streamed answer from the node thread (run on the loop through ``call_soon_threadsafe``)."""
        if not self.done.done():
            self.outq.put_nowait((body, end))

    def admit(self) -> bool:
        """One more client-stream message within the rate (a token bucket)."""
        now = time.monotonic()
        self.tokens = min(STREAM_BURST, self.tokens + (now - self.refilled) * STREAM_RATE)
        self.refilled = now
        self.tokens -= 1
        return self.tokens >= 0


class GrpcPort:
    """The server, its thread, and the calls; the transport drives the node side from its poll.

    ``shape(peer)`` is the link fault on what ``peer`` sends us; ``idle_ms`` bounds how long a
    connection without calls, or a silent peer, is kept (grpc's connection idle and keepalive:
    a call is no connection, see docs/design.md §2)."""

    def __init__(self, host: str, port: int, service: Any, shape: Callable[[str], Delivery],
                 counters: dict[str, int], *, idle_ms: float,
                 namer: Callable[[Address, Address], str] | None = None) -> None:
        self.service_name, self.methods = service.full_name, methods_of(service)
        self.idle_ms = max(int(idle_ms), 100)
        self.counters = counters
        self.mailbox = Mailbox()
        self.loop = asyncio.new_event_loop()
        self.stop_event: asyncio.Event | None = None
        self.error: str | None = None
        self.bound = 0
        self.refused_here = [0, 0]  # calls ended with RESOURCE_EXHAUSTED by the [node, gRPC] thread
        self.handed_bytes = 0  # gRPC thread: bytes put in the mailbox
        self._ids = itertools.count(1)
        self.open_io: set[CallIO] = set()  # gRPC thread: the calls being served
        self.calls = CallTable(self.mailbox, shape, counters, (host, port), namer)
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(host, port, started), name="grpc-port", daemon=True)
        self.thread.start()
        if not started.wait(START_TIMEOUT_S) or self.error is not None:
            self.shutdown()
            raise OSError(f"cannot serve gRPC on {host}:{port}: {self.error or 'the server did not start'} "
                          "(a fixed port, or the one the node had before a restart)")
        self.address = f"{host}:{self.bound}"
        local = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)  # what loopback clients reach
        self.calls.server = (local, self.bound)

    # ------------------------------------------------------------------ the node thread

    @property
    def fd(self) -> int:
        """Readable when messages or ends of calls wait in the mailbox."""
        return self.mailbox.fd

    def service(self, now: float, out: list[TransportEvent]) -> None:
        self.calls.service(now, out)

    def send(self, channel: str, frame: Frame) -> bool:
        """Hand a response to the call; a unary call's first, or one with ``fields["end"]``, ends it."""
        call = self.calls.live(channel)
        if call is None:
            return False
        body = frame.body
        if call.out_bytes - call.written_bytes + len(body) > MAX_PENDING_OUT_BYTES:
            self._end(call, EXHAUSTED, "the client does not read its answers")
            return False
        end = not call.streams_out or bool(frame.fields.get("end"))
        call.out_bytes += len(body)
        if end:
            call.finished = call.by_role = True
        return self._post(call.handle.push if call.streams_out else call.handle.finish, *(
            (body, end) if call.streams_out else (OK, body)))

    def close(self, channel: str) -> None:
        """End the call with status OK (a unary call without its answer: UNAVAILABLE); its ``closed``
        event follows, as for every channel a role closes."""
        call = self.calls.by_channel.get(channel)
        if call is not None and not call.finished:
            self._end(call, OK, None)

    def _end(self, call: Call, code: grpc.StatusCode, details: str | None) -> None:
        call.finished = True
        self.refused_here[0] += code is not OK
        self._post(call.handle.finish, code, details)

    def _post(self, fn: Callable[..., None], *args: Any) -> bool:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: the port is shutting down
            return False
        return True

    def stats(self) -> dict[str, Any]:
        return {"grpc_refused": sum(self.refused_here), "grpc_open": len(self.calls)}

    def shutdown(self) -> None:
        """Stop serving (open calls are cancelled), join the thread, release the port."""
        if self.thread.is_alive() and self.stop_event is not None:
            self._post(self.stop_event.set)
        self.thread.join(STOP_TIMEOUT_S)
        if self.mailbox.fd >= 0:
            self.mailbox.close()

    # ------------------------------------------------------------------ the gRPC thread

    def _run(self, host: str, port: int, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve(f"[{host}]" if ":" in host else host, port, started))
        finally:
            self.loop.close()
            started.set()

    async def _serve(self, host: str, port: int, started: threading.Event) -> None:
        server = aio.server(options=self._options(), maximum_concurrent_rpcs=MAX_CALLS)
        server.add_generic_rpc_handlers((self._handler(),))
        try:
            self.bound = server.add_insecure_port(f"{host}:{port}")
        except RuntimeError as exc:  # grpc's "Failed to bind": the port is taken
            self.error = f"{exc} (Address already in use?)"
            return
        self.stop_event = asyncio.Event()
        await server.start()
        started.set()
        await self.stop_event.wait()
        for io in list(self.open_io):  # ended here, not cancelled: grpc logs every cancelled handler
            io.finish(grpc.StatusCode.UNAVAILABLE, "the node is stopping")
        await server.stop(STOP_GRACE_S)
        del server
        gc.collect()  # the server's last reference lets grpc's poller thread end with this one
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
        await asyncio.get_running_loop().shutdown_asyncgens()  # request streams a reader left early

    def _options(self) -> list[tuple[str, Any]]:
        return [("grpc.so_reuseport", 0),  # a taken port is an error, as on the remoting port
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONN),
                ("grpc.max_connection_idle_ms", self.idle_ms),  # no call for that long: GOAWAY
                ("grpc.keepalive_time_ms", self.idle_ms), ("grpc.keepalive_timeout_ms", self.idle_ms),
                ("grpc.server_handshake_timeout_ms", max(self.idle_ms, 5000)),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_recv_ping_interval_without_data_ms", 10000)]

    def _handler(self) -> grpc.GenericRpcHandler:
        """Every method, raw bytes in and out; any other path is grpc's UNIMPLEMENTED."""
        handlers = {}
        for name, kind in self.methods.items():
            async def serve(request: Any, context: aio.ServicerContext, name: str = name,
                            kind: tuple[bool, bool] = kind) -> bytes | None:
                return await self._call(name, kind, request, context)
            handlers[name] = _MAKERS[kind](serve)
        return grpc.method_handlers_generic_handler(self.service_name, handlers)

    async def _call(self, name: str, kind: tuple[bool, bool], request: Any, context: aio.ServicerContext) -> Any:
        """One call from its first message to its end (the reader/writer API for streams)."""
        meta = {m[0]: m[1] for m in context.invocation_metadata() or ()}
        fields = {"method": name, **{k: meta[h] for k, h in FIELD_HEADERS if isinstance(meta.get(h), str)}}
        call = Call(f"{GRPC_PREFIX}{next(self._ids)}", fields, peer_address(context.peer()), kind[1], kind[0])
        io = call.handle = CallIO()
        self.open_io.add(io)
        tasks = []
        try:
            if call.streams_in:
                tasks.append(asyncio.ensure_future(self._read(call, request)))
            else:
                self._arrive(call, request)
            if call.streams_out:
                tasks.append(asyncio.ensure_future(self._write(call, context)))
            code, payload = await io.done
        finally:
            for task in tasks:
                task.cancel()
            call.over = True
            self.open_io.discard(io)
            self.mailbox.put((call, 0, None))
        if code is not OK:
            await context.abort(code, payload)
        if not call.streams_out:
            if payload is None:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "the server closed the call without an answer")
            return payload
        return None

    def _arrive(self, call: Call, message: bytes) -> None:
        """A message the client wrote: to the mailbox, unless it breaks a bound (then the call ends)."""
        if call.over:
            return
        if call.streams_in and not call.handle.admit():
            return self._refuse(call, f"more than {STREAM_RATE:.0f} messages a second on one stream")
        if (call.in_msgs - call.taken_msgs >= MAX_PENDING_IN_MSGS
                or call.in_bytes - call.taken_bytes + len(message) > MAX_PENDING_IN_BYTES
                or self.handed_bytes - self.calls.taken_bytes + len(message) > MAX_PENDING_IN_TOTAL):
            return self._refuse(call, "the node is behind on this call's messages")
        call.in_msgs += 1
        call.in_bytes += len(message)
        self.handed_bytes += len(message)
        self.mailbox.put((call, call.in_msgs, message))

    def _refuse(self, call: Call, details: str) -> None:
        call.over = True
        self.refused_here[1] += 1
        call.handle.finish(EXHAUSTED, details)

    async def _read(self, call: Call, requests: Any) -> None:
        try:
            async for message in requests:  # cancelled when the call ends (inside grpc's generator, which ends too)
                self._arrive(call, message)
        except Exception:  # noqa: BLE001 - a broken stream ends its own call, nothing else
            call.handle.finish(grpc.StatusCode.CANCELLED, "the client's stream broke")
            return
        if call.streams_out:  # the client half-closed: the contract ends the call (a closed event)
            call.handle.finish(OK)

    async def _write(self, call: Call, context: aio.ServicerContext) -> None:
        outq = call.handle.outq
        try:
            while True:
                body, end = await outq.get()
                if body or not end:
                    await context.write(body)
                    call.written_bytes += len(body)
                if end:
                    return call.handle.finish(OK)
        except Exception:  # noqa: BLE001 - the client went away mid-write: its call is over
            call.handle.finish(grpc.StatusCode.CANCELLED, "the client went away")

