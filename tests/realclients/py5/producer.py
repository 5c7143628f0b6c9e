"""A producer of the official RocketMQ 5 Python client (rocketmq-python-client 5.1.2) for rmqemu's
real-client tests: normal, FIFO, delay or transactional sends, one JSON line for each thing it saw.

``python producer.py ARGS`` (a JSON object, or a file holding one), run by the client's venv
(tests/realclients/py5client.py). Arguments:

- ``endpoints`` ("host:port;host:port"), ``topic``; ``count`` (1), ``type``: "normal" (default),
  "fifo", "delay" or "transaction"; ``interval_s`` between sends (0); ``async``: send with
  ``send_async`` (normal, fifo, delay only; false).
- message ``i``: body ``bodies_hex[i % len]`` (default the UTF-8 of ``"body-<i>"``), ``tag``,
  ``keys`` (default ``["k<i>"]``), ``properties`` (str to str, any Unicode, on every message);
  fifo: ``message_group`` ("group-0"); delay: ``delay_s`` from the send (1) or
  ``delivery_timestamp_ms`` (absolute), either rounded up to whole seconds: the client sends
  ``Message.delivery_timestamp`` as the wire Timestamp's seconds.
- transaction: ``end`` what the producer does after each half message: "commit" (default),
  "rollback" or "none" (leave it to the server's check); ``check_answer`` what the checker answers:
  "commit" (default), "rollback" or "unknown"; ``linger_s``: seconds to stay up after the last
  send, for checks (0), or until ``checks`` checks came.
- ``request_timeout_s`` (3), ``namespace`` (""), ``client_metrics`` (false: see common.py),
  ``stop_on_stdin_eof`` (false).

Lines (each with ``event`` and ``ts``, ms):
``started {client_id, pid}``; ``sent {i, type, ok, message_id, transaction_id, queue, offset,
body_hex, delivery_timestamp_s (delay), ms}`` or ``sent {i, type, ok: false, error}`` (``Type:
text``); transaction only: ``end_transaction {i, message_id, resolution, ok, error}``; ``check {message_id, answer,
...message fields}`` for every check the server asked; ``metric_settings {on, endpoints}``;
``shutdown {ok, error}``; ``done {sent, failed, checks}``. A failure before the first send is
``error {stage, error, trace}`` and exit 2.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

import common  # beside this file: its folder is first on sys.path
from common import emit, error_text

CHECKS: list[str] = []
_checks_changed = threading.Condition()


def make_checker(answer: str) -> Any:
    """A TransactionChecker answering ``answer`` to every check, printing each."""
    from rocketmq import TransactionChecker
    from rocketmq.grpc_protocol import TransactionResolution
    resolution = {"commit": TransactionResolution.COMMIT, "rollback": TransactionResolution.ROLLBACK,
                  "unknown": TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED}[answer]

    class Checker(TransactionChecker):
        def check(self, message: Any) -> Any:
            emit("check", answer=answer, **common.message_fields(message))
            with _checks_changed:
                CHECKS.append(message.message_id)
                _checks_changed.notify_all()
            return resolution

    return Checker()


def build_message(args: dict[str, Any], i: int) -> Any:
    from rocketmq import Message
    msg = Message()
    msg.topic = args["topic"]
    bodies = [bytes.fromhex(b) for b in args.get("bodies_hex") or []]
    msg.body = bodies[i % len(bodies)] if bodies else f"body-{i}".encode()
    if args.get("tag"):
        msg.tag = args["tag"]
    for key in args.get("keys") or [f"k{i}"]:
        msg.keys = key  # the client's setter takes one key a call
    for key, value in (args.get("properties") or {}).items():
        msg.add_property(key, value)
    kind = args.get("type", "normal")
    if kind == "fifo":
        msg.message_group = args.get("message_group", "group-0")
    elif kind == "delay":
        ts = args.get("delivery_timestamp_ms")
        if ts is None:
            ts = (time.time() + float(args.get("delay_s", 1))) * 1000
        # the client puts this value into the wire Timestamp's seconds as it is (producer.py of
        # 5.1.2), though a received message's delivery_timestamp is in ms: give it whole seconds,
        # rounded up so that a message is never due early
        msg.delivery_timestamp = math.ceil(float(ts) / 1000)
    return msg


def send_one(producer: Any, args: dict[str, Any], i: int) -> bool:
    """Send message ``i`` (and end its transaction); print what happened; True when the send was ok."""
    kind = args.get("type", "normal")
    started = time.monotonic()
    line: dict[str, Any] = {"i": i, "type": kind}
    transaction = None
    try:
        msg = build_message(args, i)
        line["body_hex"] = bytes(msg.body).hex()
        if kind == "delay":
            line["delivery_timestamp_s"] = msg.delivery_timestamp
        if kind == "transaction":
            transaction = producer.begin_transaction()
            receipt = producer.send(msg, transaction)
        elif args.get("async"):
            future: Future[Any] = producer.send_async(msg)
            receipt = future.result(timeout=float(args.get("request_timeout_s", 3)) * 4 + 5)
        else:
            receipt = producer.send(msg)
        queue = receipt.message_queue
        line.update(ok=True, message_id=receipt.message_id, transaction_id=receipt.transaction_id or None,
                    queue=str(queue) if queue is not None else None, offset=receipt.offset)
    except Exception as exc:  # noqa: BLE001 - a failed send is a line to print, whatever the client raised
        line.update(ok=False, error=error_text(exc))
    emit("sent", **line, ms=round((time.monotonic() - started) * 1000, 3))
    if transaction is not None and line["ok"]:
        end_transaction(transaction, args.get("end", "commit"), i, line["message_id"])
    return bool(line["ok"])


def end_transaction(transaction: Any, end: str, i: int, message_id: str) -> None:
    if end == "none":
        emit("end_transaction", i=i, message_id=message_id, resolution="none", ok=True, error=None)
        return
    try:
        transaction.commit() if end == "commit" else transaction.rollback()
        emit("end_transaction", i=i, message_id=message_id, resolution=end, ok=True, error=None)
    except Exception as exc:  # noqa: BLE001 - a failed end is a line to print
        emit("end_transaction", i=i, message_id=message_id, resolution=end, ok=False, error=error_text(exc))


def linger(args: dict[str, Any], stop: threading.Event) -> None:
    """Stay up ``linger_s`` for checks, or less once ``checks`` of them came."""
    deadline = time.monotonic() + float(args.get("linger_s", 0))
    want = args.get("checks")
    with _checks_changed:
        while not stop.is_set() and time.monotonic() < deadline:
            if want is not None and len(CHECKS) >= int(want):
                return
            _checks_changed.wait(min(0.2, max(0.0, deadline - time.monotonic())))


def main() -> int:
    try:
        args = common.load_args()
        common.guard_metrics(args)
        from rocketmq import Producer
        checker = make_checker(args.get("check_answer", "commit")) if args.get("type") == "transaction" else None
        producer = Producer(common.configuration(args), (args["topic"],), checker)
        producer.startup()
    except Exception as exc:  # noqa: BLE001 - any start-up failure is the error line
        return common.fail("startup", exc)
    stop = common.started(producer, args)
    sent = failed = 0
    for i in range(int(args.get("count", 1))):
        if stop.is_set():
            break
        if send_one(producer, args, i):
            sent += 1
        else:
            failed += 1
        if args.get("interval_s"):
            stop.wait(float(args["interval_s"]))
    linger(args, stop)
    common.shutdown(producer)
    emit("done", sent=sent, failed=failed, checks=len(CHECKS))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the client's threads must not hold the process up
