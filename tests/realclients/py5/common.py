"""What the RocketMQ 5 client scripts beside this file share: JSON lines out, JSON arguments in, the
client's configuration, and the metrics guard. They run under the client's own venv
(tests/realclients/py5client.py) with this folder first on ``sys.path``; nothing of rmqemu.

Metrics. The client never exports on its own: it starts an OpenTelemetry OTLP exporter only when
the server's Settings reply on the Telemetry stream says ``metric.on`` with endpoints, and then
sends to those endpoints (a network the tests do not have). With ``metric.on`` false, the
PushConsumer's ``reset_metric`` raises (rocketmq-clients#1191), which ends the stream's read loop:
later server commands (Settings, RecoverOrphanedTransactionCommand) are dropped. So
:func:`guard_metrics` makes ``reset_metric`` of every client class log the server's metric
settings and do nothing: no exporter whatever the server says, and a read loop that lives, so
transaction checks arrive. Settings themselves are applied first and untouched. Arguments
``{"client_metrics": true}`` keep the client's own behaviour (to see #1191 itself), and
``OTEL_SDK_DISABLED=true`` is set besides, so a MeterProvider made anyway is a no-op.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

_out = threading.Lock()
os.environ.setdefault("OTEL_SDK_DISABLED", "true")  # before OpenTelemetry is imported


def emit(event: str, **fields: Any) -> None:
    """One JSON line ``{"event": event, ..., "ts": ms}`` on stdout, whole and flushed, from any thread."""
    line = json.dumps({"event": event, **fields, "ts": now_ms()}, separators=(",", ":"), ensure_ascii=True)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def now_ms() -> float:
    return round(time.time() * 1000.0, 3)


def error_text(exc: BaseException) -> str:
    """``Type: text`` of an exception, the client's own class name included."""
    return f"{type(exc).__name__}: {exc}"


def fail(stage: str, exc: BaseException) -> int:
    """Print the error line and return the exit code 2. ``causes``: the exceptions this one was raised
    while handling, innermost last (the PushConsumer's failed start raises ``'NoneType' ... shutdown``
    while cleaning up after the real cause); ``trace``: the last frames."""
    causes, seen = [], exc.__cause__ or exc.__context__
    while seen is not None and len(causes) < 5:
        causes.append(error_text(seen))
        seen = seen.__cause__ or seen.__context__
    emit("error", stage=stage, error=error_text(exc), causes=causes, pid=os.getpid(),
         trace=traceback.format_exc(limit=-4).splitlines()[-8:])
    return 2


def load_args() -> dict[str, Any]:
    """``argv[1]``: a JSON object, or the path of a file holding one (drivers.start_program's way)."""
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} '<JSON object>' | <config.json>")
    text = sys.argv[1]
    if not text.lstrip().startswith("{"):
        with open(text, encoding="utf-8") as fh:
            text = fh.read()
    args = json.loads(text)
    if not isinstance(args, dict):
        raise SystemExit("the argument must be a JSON object")
    return args


def configuration(args: dict[str, Any]) -> Any:
    """The client's ClientConfiguration: ``endpoints`` ("host:port;host:port"), ``namespace`` (""),
    ``request_timeout_s`` (the client's default, 3 s; whole seconds: the client builds a route's
    Duration from it and fails on a float), no credentials (the emulator checks none)."""
    from rocketmq import ClientConfiguration, Credentials
    return ClientConfiguration(args["endpoints"], Credentials(), namespace=args.get("namespace", ""),
                               request_timeout=int(args.get("request_timeout_s", 3)))


def guard_metrics(args: dict[str, Any]) -> None:
    """Unless ``client_metrics`` is true: ``reset_metric`` of every client class only logs (docstring above)."""
    if args.get("client_metrics"):
        return
    from rocketmq.v5.client.client import Client
    from rocketmq.v5.consumer.push.push_consumer import PushConsumer

    def reset_metric(self: Any, metric: Any) -> None:
        endpoints = [f"{a.host}:{a.port}" for a in metric.endpoints.addresses]
        emit("metric_settings", on=bool(metric.on), endpoints=endpoints)

    for cls in (Client, PushConsumer):
        cls.reset_metric = reset_metric


def message_fields(msg: Any) -> dict[str, Any]:
    """A received (or checked) message as JSON: body in hex, so any bytes survive."""
    body = msg.body or b""
    return {"message_id": msg.message_id, "topic": msg.topic, "tag": msg.tag, "keys": sorted(msg.keys or ()),
            "message_group": msg.message_group, "delivery_timestamp": msg.delivery_timestamp,
            "born_timestamp": msg.born_timestamp, "delivery_attempt": msg.delivery_attempt,
            "message_type": msg.message_type, "corrupted": bool(msg.corrupted), "body_hex": bytes(body).hex(),
            "properties": dict(msg.properties or {})}


def watch_stdin(stop: threading.Event, enabled: bool) -> None:
    """When ``enabled``: set ``stop`` once stdin reaches EOF (the test closed it, or died)."""
    if not enabled:
        return

    def run() -> None:
        sys.stdin.read()
        stop.set()
    threading.Thread(target=run, daemon=True, name="stdin-eof").start()


def started(client: Any, args: dict[str, Any]) -> threading.Event:
    """The ``started`` line; the event a script's loop watches (set at stdin's EOF when the
    test asked for ``stop_on_stdin_eof``)."""
    emit("started", client_id=client.client_id, pid=os.getpid())
    stop = threading.Event()
    watch_stdin(stop, bool(args.get("stop_on_stdin_eof")))
    return stop


def shutdown(client: Any, timeout_s: float = 10.0) -> None:
    """``client.shutdown()`` on a thread, at most ``timeout_s``; the ``shutdown`` line says how it went."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            client.shutdown()
            result["ok"] = True
        except Exception as exc:  # noqa: BLE001 - any failure to shut down is a line to print
            result["error"] = error_text(exc)
    thread = threading.Thread(target=run, daemon=True, name="shutdown")
    thread.start()
    thread.join(timeout_s)
    emit("shutdown", ok=bool(result.get("ok")), error=result.get("error") or ("timed out" if not result else None))
