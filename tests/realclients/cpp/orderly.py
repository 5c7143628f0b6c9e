"""An ordered producer or an orderly push consumer of the Apache RocketMQ C++ client (2.x, through
the ``rocketmq`` ctypes binding of PyPI's rocketmq-python-cvs), for rmqemu's real-client tests.

Run by the Python of the venv the package is installed in (tests/realclients/pyclient.py), not by
the project's: this file imports nothing of rmqemu. ``python orderly.py CONFIG`` (a JSON file).
Prints one JSON object per line on stdout (flushed at once); stdin closing stops it: it prints
``{"done": true}`` and exits 0 (the producer after shutting down; the consumer without, see
:func:`consume`).

Config: ``role`` ("producer" or "consumer"), ``nameSrv``, ``topic``, ``group``; a producer's
``keys`` (how many sharding keys, default 16) and ``interval_ms`` (between sends, default 0).

- producer: ``{"ready": true}`` once started; then reads commands on stdin, one JSON object a
  line: ``{"send": N}`` sends N more messages, key ``k<i>`` for i = 0, 1, ..., keys-1, 0, ... in
  turn, each by ``send_orderly`` with the key's index as the argument (its selector picks queue
  ``index % queues``: the key stays in the client), at most :data:`ATTEMPTS` times at that queue,
  body ``<key>:<seq>`` (seq counts each key's sends from 0). One line per message: ``{"action":
  "sent", "ok", "msgId", "offset", "status", "attempts", "key", "key_index", "seq", "queue_index",
  "queues", "ts"}`` (``error`` when not ok), then
  ``{"batch": n, "sent": total}``.
- consumer: ``{"ready": true}`` once started, then a line per delivery to its orderly listener:
  ``{"action": "consumed", "msgId", "queue_id", "queue_offset", "keys", "key", "seq", "sha256",
  "reconsume_times", "ts"}`` (``key``/``seq`` from the body).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
import time
from typing import Any

from jsonout import emit, now_ms  # beside this file: its folder is first on sys.path
from rocketmq.client import Message, Producer, PushConsumer

#: Sends of one message to its selected queue. The client's own retry (``autoRetryTimes``) would
#: send a failed attempt's message to a queue of another broker, as an ordered send must not: a
#: first write on a new connection sometimes fails at once in this build (seen under load).
ATTEMPTS = 3


def produce(cfg: dict[str, Any]) -> None:
    keys, interval = int(cfg.get("keys", 16)), float(cfg.get("interval_ms", 0)) / 1000.0
    producer = Producer(cfg["group"])
    producer.set_namesrv_addr(cfg["nameSrv"])
    producer.start()
    emit({"ready": True})
    seqs = [0] * keys
    total = batch = 0
    chosen: dict[str, int] = {}

    def select(size: int, msg: Any, arg: Any) -> int:
        index = ctypes.cast(arg, ctypes.POINTER(ctypes.c_int))[0] % size
        chosen.update(queue_index=index, queues=size)
        return index

    for raw in sys.stdin:  # EOF: stop
        if not raw.strip():
            continue
        for _ in range(int(json.loads(raw)["send"])):
            i = total % keys
            key, seq = f"k{i}", seqs[i]
            msg = Message(cfg["topic"])
            msg.set_keys(key)
            msg.set_body(f"{key}:{seq}".encode())
            chosen.clear()
            line: dict[str, Any] = {"action": "sent", "key": key, "key_index": i, "seq": seq}
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    res = producer.send_orderly(msg, i, retry_times=0, queue_selector=select)
                    line.update(ok=True, msgId=res.msg_id, offset=res.offset, status=int(res.status), attempts=attempt)
                    break
                except Exception as exc:  # noqa: BLE001 - the binding raises its own class per status: a failed send
                    line.update(ok=False, error=f"{type(exc).__name__}: {exc}", attempts=attempt)
            seqs[i] += 1
            total += 1
            emit({**line, **chosen, "ts": now_ms()})
            if interval:
                time.sleep(interval)
        batch += 1
        emit({"batch": batch, "sent": total})
    producer.shutdown()


def consume(cfg: dict[str, Any]) -> None:
    def listener(msg: Any) -> None:  # returning is CONSUME_SUCCESS; raising would be SUSPEND_CURRENT_QUEUE
        body = msg.body
        key, _, seq = body.decode(errors="replace").partition(":")
        emit({"action": "consumed", "msgId": msg.id, "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
              "keys": (msg.keys or b"").decode(errors="replace"), "key": key,
              "seq": int(seq) if seq.isdigit() else None, "sha256": hashlib.sha256(body).hexdigest(),
              "reconsume_times": msg.reconsume_times, "ts": now_ms()})

    consumer = PushConsumer(cfg["group"], orderly=True)
    consumer.set_namesrv_addr(cfg["nameSrv"])
    consumer.subscribe(cfg["topic"], listener)
    consumer.start()
    emit({"ready": True})
    sys.stdin.read()  # until EOF
    # no consumer.shutdown(): this build of the library crashes in it (SIGSEGV in
    # shutdownMessageTraceInnerProducer when message trace is off, apache/rocketmq-client-cpp#286),
    # so the consumer leaves like a killed one: its connections close, its broker locks expire
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
