"""A PushConsumer of the official RocketMQ 5 Python client (rocketmq-python-client 5.1.2) for
rmqemu's real-client tests: consume for a while or until enough messages came, printing each.

``python push_consumer.py ARGS`` (a JSON object, or a file holding one), run by the client's venv
(tests/realclients/py5client.py). Arguments:

- ``endpoints``, ``topic``, ``group``; ``filter`` (tag expression, "*") or ``sql`` (SQL92).
- ``fail_attempts`` (0): the listener answers FAILURE while a message's ``delivery_attempt`` is
  at most this (the client then retries it with the server's backoff), SUCCESS after.
- stop after ``count`` SUCCESS answers, or ``duration_s`` (30), whichever is first;
  ``stop_on_stdin_eof`` (false). ``threads`` consumption threads (4; the client's default is 20).
- ``request_timeout_s`` (3), ``namespace`` (""), ``client_metrics`` (false: see common.py; the
  default keeps rocketmq-clients#1191 from ending the Telemetry read loop).

The client's ``startup`` waits up to 10 s for the server's Settings reply and fails without one.

Lines (each with ``event`` and ``ts``, ms): ``started {client_id, pid}``; ``consumed {result,
message_id, delivery_attempt, topic, tag, keys, message_group, delivery_timestamp,
born_timestamp, message_type, corrupted, body_hex, properties, thread}`` (result "SUCCESS" or
"FAILURE"); ``metric_settings``; ``shutdown {ok, error}``; ``done {consumed, succeeded}``. A
start-up failure is ``error {stage, error, trace}`` and exit 2.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

import common  # beside this file: its folder is first on sys.path
from common import emit
from simple_consumer import filter_expression

_lock = threading.Condition()
_counts = {"consumed": 0, "succeeded": 0}


def make_listener(fail_attempts: int) -> Any:
    from rocketmq import ConsumeResult, MessageListener

    class Listener(MessageListener):
        def consume(self, message: Any) -> Any:
            ok = (message.delivery_attempt or 0) > fail_attempts
            emit("consumed", result="SUCCESS" if ok else "FAILURE", **common.message_fields(message),
                 thread=threading.current_thread().name)
            with _lock:
                _counts["consumed"] += 1
                _counts["succeeded"] += ok
                _lock.notify_all()
            return ConsumeResult.SUCCESS if ok else ConsumeResult.FAILURE

    return Listener()


def main() -> int:
    try:
        args = common.load_args()
        common.guard_metrics(args)
        from rocketmq import PushConsumer
        consumer = PushConsumer(common.configuration(args), args["group"],
                                make_listener(int(args.get("fail_attempts", 0))),
                                {args["topic"]: filter_expression(args)},
                                consumption_thread_count=int(args.get("threads", 4)))
        consumer.startup()
    except Exception as exc:  # noqa: BLE001 - any start-up failure is the error line
        return common.fail("startup", exc)
    stop = common.started(consumer, args)
    deadline = time.monotonic() + float(args.get("duration_s", 30))
    count = args.get("count")
    with _lock:
        while not stop.is_set() and time.monotonic() < deadline:
            if count is not None and _counts["succeeded"] >= int(count):
                break
            _lock.wait(min(0.2, max(0.0, deadline - time.monotonic())))
    common.shutdown(consumer)
    with _lock:
        emit("done", **_counts)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the client's threads must not hold the process up
