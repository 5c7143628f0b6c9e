"""A producer of normal (unordered) messages or a concurrent push consumer of the Apache RocketMQ
C++ client (2.x, through the ``rocketmq`` ctypes binding of PyPI's rocketmq-python-cvs), for
rmqemu's real-client tests.

Run by the Python of the venv the package is installed in (tests/realclients/pyclient.py), not by
the project's: this file imports nothing of rmqemu. ``python normal.py CONFIG`` (a JSON file).
Prints one JSON object per line on stdout (flushed at once); stdin closing stops it: it prints
``{"done": true}`` and exits 0.

Config: ``role`` ("producer" or "consumer"), ``nameSrv``, ``topic``, ``group``; a producer's
``bodies`` (base64 strings, used in turn), ``count`` (at most this many sends, default unbounded)
and ``interval_ms`` (between sends, default 0).

- producer: ``{"ready": true, "pid"}`` once started, then sends one message after another with
  ``send_sync`` (the client's ``sendDefaultImpl``: up to 5 attempts, each to a queue of another
  broker than the last) until stdin closes or ``count`` is reached. Message ``i`` has the key
  ``k<i>`` and body ``bodies[i % len(bodies)]``, set with ``SetByteMessageBody`` (the binding's
  ``set_body`` passes a C string: it would end a body at its first NUL). One line per send:
  ``{"action": "sent", "i", "ok", "msgId", "offset", "status", "key", "sha256", "born", "ms",
  "ts"}`` (``error`` when not ok; ``msgId`` is the UNIQ_KEY the last attempt carried: this client
  draws a new one for each attempt).
- consumer: ``{"ready": true, "pid"}`` once started, then a line per delivery to its concurrent
  listener: ``{"action": "consumed", "msgId", "keys", "queue_id", "queue_offset", "body_b64",
  "sha256", "reconsume_times", "ts"}``. The C API gives a received body as a C string
  (``GetMessageBody``): a body holding a NUL byte reads as the bytes before it.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import threading
from typing import Any

from jsonout import emit, now_ms  # beside this file: its folder is first on sys.path
from rocketmq.client import Message, Producer, PushConsumer
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import dll


def watch_stdin(stop: threading.Event) -> None:
    """Set ``stop`` when stdin reaches EOF (the test closed it, or died)."""
    def run() -> None:
        sys.stdin.read()
        stop.set()
    threading.Thread(target=run, daemon=True).start()


def produce(cfg: dict[str, Any]) -> None:
    bodies = [base64.b64decode(b) for b in cfg["bodies"]]
    count, interval = cfg.get("count"), float(cfg.get("interval_ms", 0)) / 1000.0
    producer = Producer(cfg["group"])
    producer.set_namesrv_addr(cfg["nameSrv"])
    producer.start()
    emit({"ready": True, "pid": os.getpid()})
    stop = threading.Event()
    watch_stdin(stop)
    i = 0
    while not stop.is_set() and (count is None or i < int(count)):
        body = bodies[i % len(bodies)]
        msg = Message(cfg["topic"])
        msg.set_keys(f"k{i}")
        ffi_check(dll.SetByteMessageBody(msg, body, len(body)))
        line: dict[str, Any] = {"action": "sent", "i": i, "key": f"k{i}", "sha256": hashlib.sha256(body).hexdigest()}
        born = now_ms()
        try:
            res = producer.send_sync(msg)
            line.update(ok=True, msgId=res.msg_id, offset=res.offset, status=int(res.status))
        except Exception as exc:  # noqa: BLE001 - the binding raises its own class per status: a failed send to print
            line.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        ts = now_ms()
        emit({**line, "born": born, "ms": round(ts - born, 3), "ts": ts})
        i += 1
        if interval:
            stop.wait(interval)
    producer.shutdown()


def consume(cfg: dict[str, Any]) -> None:
    def listener(msg: Any) -> None:  # returning is CONSUME_SUCCESS
        body = msg.body or b""
        emit({"action": "consumed", "msgId": msg.id, "keys": (msg.keys or b"").decode(errors="replace"),
              "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
              "body_b64": base64.b64encode(body).decode(), "sha256": hashlib.sha256(body).hexdigest(),
              "reconsume_times": msg.reconsume_times, "ts": now_ms()})

    consumer = PushConsumer(cfg["group"])
    consumer.set_namesrv_addr(cfg["nameSrv"])
    consumer.subscribe(cfg["topic"], listener)
    consumer.start()
    emit({"ready": True, "pid": os.getpid()})
    sys.stdin.read()  # until EOF
    # no consumer.shutdown(): this build of the library crashes in it (SIGSEGV in
    # shutdownMessageTraceInnerProducer when message trace is off, apache/rocketmq-client-cpp#286)
    emit({"done": True, "shutdown": False, "ts": now_ms()})
    os._exit(0)  # skips the library's static destructors too


def main() -> int:
    with open(sys.argv[1]) as fh:
        cfg = json.load(fh)
    {"producer": produce, "consumer": consume}[cfg["role"]](cfg)
    emit({"done": True, "ts": now_ms()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
