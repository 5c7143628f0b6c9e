"""A SimpleConsumer of the official RocketMQ 5 Python client (rocketmq-python-client 5.1.2) for
rmqemu's real-client tests: receive with an invisible duration, then ack, change the invisible
duration or leave the lease to run out, and print every message and every answer.

``python simple_consumer.py ARGS`` (a JSON object, or a file holding one), run by the client's
venv (tests/realclients/py5client.py). Arguments:

- ``endpoints``, ``topic``, ``group``; ``filter`` (tag expression, "*"); ``sql`` (an SQL92
  filter instead, optional).
- ``max`` messages a receive (16), ``invisible_s`` (15), ``await_s`` the long poll (5; the
  client's default is 20).
- ``ack_from_attempt`` (1): a message is acked when its ``delivery_attempt`` is at least this;
  before that it gets ``change_invisible_s`` (a change of its invisible duration) when given,
  else nothing (its lease runs out). So 2 with ``change_invisible_s`` 1 is "change, then ack the
  redelivery"; ``ack`` false never acks.
- stop after ``count`` acks (or ``count`` receptions when ``ack`` is false), or ``duration_s``
  (30), whichever is first; ``stop_on_stdin_eof`` (false).
- ``request_timeout_s`` (3), ``namespace`` (""), ``client_metrics`` (false: see common.py).

Lines (each with ``event`` and ``ts``, ms): ``started {client_id, pid}``; ``received {message_id,
delivery_attempt, topic, tag, keys, message_group, delivery_timestamp, born_timestamp,
message_type, corrupted, body_hex, properties}``; ``ack {message_id, delivery_attempt, ok,
error}``; ``change_invisible {message_id, delivery_attempt, invisible_s, ok, error}``;
``receive_error {error}``; ``metric_settings``; ``shutdown {ok, error}``; ``done {received, acked,
receive_errors}``. A start-up failure is ``error {stage, error, trace}`` and exit 2.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any

import common  # beside this file: its folder is first on sys.path
from common import emit, error_text


def filter_expression(args: dict[str, Any]) -> Any:
    from rocketmq import FilterExpression
    from rocketmq.grpc_protocol import FilterType
    if args.get("sql"):
        return FilterExpression(args["sql"], FilterType.SQL)
    return FilterExpression(args.get("filter", "*"))


def answer(consumer: Any, msg: Any, args: dict[str, Any]) -> bool:
    """Ack, change the invisible duration, or nothing, as the arguments say; True when acked."""
    attempt = msg.delivery_attempt
    if args.get("ack", True) and attempt >= int(args.get("ack_from_attempt", 1)):
        try:
            consumer.ack(msg)
            emit("ack", message_id=msg.message_id, delivery_attempt=attempt, ok=True, error=None)
            return True
        except Exception as exc:  # noqa: BLE001 - a failed ack is a line to print
            emit("ack", message_id=msg.message_id, delivery_attempt=attempt, ok=False, error=error_text(exc))
            return False
    if args.get("change_invisible_s") is not None:
        seconds = int(args["change_invisible_s"])
        try:
            consumer.change_invisible_duration(msg, seconds)
            emit("change_invisible", message_id=msg.message_id, delivery_attempt=attempt, invisible_s=seconds,
                 ok=True, error=None)
        except Exception as exc:  # noqa: BLE001 - a failed change is a line to print
            emit("change_invisible", message_id=msg.message_id, delivery_attempt=attempt, invisible_s=seconds,
                 ok=False, error=error_text(exc))
    return False


def main() -> int:
    try:
        args = common.load_args()
        common.guard_metrics(args)
        from rocketmq import SimpleConsumer
        consumer = SimpleConsumer(common.configuration(args), args["group"], {args["topic"]: filter_expression(args)},
                                  await_duration=int(args.get("await_s", 5)))  # whole seconds: a float breaks it
        consumer.startup()
    except Exception as exc:  # noqa: BLE001 - any start-up failure is the error line
        return common.fail("startup", exc)
    stop = common.started(consumer, args)
    deadline = time.monotonic() + float(args.get("duration_s", 30))
    count = args.get("count")
    received = acked = errors = 0
    while not stop.is_set() and time.monotonic() < deadline:
        if count is not None and (acked if args.get("ack", True) else received) >= int(count):
            break
        try:
            messages = consumer.receive(int(args.get("max", 16)), int(args.get("invisible_s", 15)))
        except Exception as exc:  # noqa: BLE001 - a failed receive is a line to print, then the next poll
            errors += 1
            emit("receive_error", error=error_text(exc))
            stop.wait(0.2)
            continue
        for msg in messages or ():
            received += 1
            emit("received", **common.message_fields(msg))
            acked += answer(consumer, msg, args)
    common.shutdown(consumer)
    emit("done", received=received, acked=acked, receive_errors=errors)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the client's threads must not hold the process up
