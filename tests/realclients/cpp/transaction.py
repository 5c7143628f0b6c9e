"""A transactional producer of the Apache RocketMQ C++ client (2.x, the library PyPI's
rocketmq-python-cvs bundles), for rmqemu's real-client tests.

The binding has no transaction class, so this calls the library's C API with ctypes:
``CreateTransactionProducer(group, checker, userData)``, ``SendMessageTransaction(producer, msg,
executor, userData, CSendResult*)``; both callbacks return ``CTransactionStatus``
(0 commit, 1 rollback, 2 unknown). Run by the Python of the venv the package is installed in
(tests/realclients/pyclient.py), not by the project's: this file imports nothing of rmqemu.
``python transaction.py CONFIG`` (a JSON file). Prints one JSON object per line on stdout (flushed
at once); stdin closing stops it: it shuts the producer down, prints ``{"done": true}``, exits 0.

Config: ``nameSrv``, ``topic``, ``group``, ``messages`` (a list of ``{"key", "body"`` (base64),
``"local"``, ``"check"}``: what the local transaction answers for that key, and what the checker
answers when the broker asks; each ``COMMIT``, ``ROLLBACK`` or ``UNKNOWN``), ``interval_ms``
(between sends, default 0), ``heartbeat_group`` (optional, see below).

Lines: ``{"ready": true, "pid"}`` once started; per message, ``{"action": "execute", "key",
"uniq", "result_transaction_id", "answer", "ts"}`` from the executor (``uniq`` is the UNIQ_KEY,
which the client makes the message's transactionId; ``result_transaction_id`` the send answer's
``transactionId``, copied into the message when not empty: 4.9.4 never sets it), then
``{"action": "sent", "i", "key", "ok", "msgId", "offset", "status", "local", "sha256", "ts"}``
once ``SendMessageTransaction`` returned (after the oneway END_TRANSACTION went out; ``error``
when not ok); ``{"action": "all_sent", "count"}``; and for every check the broker sends,
``{"action": "check", "key", "uniq", "msgId", "check_times", "n", "answer", "topic", "queue_id",
"queue_offset", "commit_log_offset", "sha256", "ts"}`` (``msgId`` is the id the client decoded for
the checked copy; ``n`` counts this key's checks).

This client heartbeats when it starts, 10 ms later, then every 30 s
(``MQClientFactory::startScheduledTask``), each time to the brokers it knows; it learns them from
its first send's route. Unless that route came within 10 ms of the start, no broker has this
producer group's channel for 30 s, and its checks find nobody to ask. ``heartbeat_group`` starts
a plain producer of that group in the same process after the first send: the two share the
process's client instance, whose start heartbeats at once, naming both groups.
"""
from __future__ import annotations

import base64
import ctypes
import hashlib
import json
import os
import sys
import threading
from ctypes import CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_longlong, c_void_p
from typing import Any

from jsonout import emit, now_ms  # beside this file: its folder is first on sys.path
from rocketmq.ffi import _DYLIB_PATH

STATUS = {"COMMIT": 0, "ROLLBACK": 1, "UNKNOWN": 2}  # CTransactionStatus
NAMES = {v: k for k, v in STATUS.items()}


class CSendResult(Structure):
    _fields_ = [("sendStatus", c_int), ("msgId", c_char * 256), ("offset", c_longlong)]


# CTransactionStatus (*)(CProducer*, CMessageExt* / CMessage*, void*)
CALLBACK = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)


def library() -> ctypes.CDLL:
    """The bundled library with the signatures this script calls (a handle of its own)."""
    lib = ctypes.CDLL(_DYLIB_PATH)
    sigs: dict[str, tuple[list[Any], Any]] = {
        "CreateTransactionProducer": ([c_char_p, CALLBACK, c_void_p], c_void_p),
        "CreateProducer": ([c_char_p], c_void_p),
        "SetProducerNameServerAddress": ([c_void_p, c_char_p], c_int),
        "StartProducer": ([c_void_p], c_int),
        "ShutdownProducer": ([c_void_p], c_int),
        "DestroyProducer": ([c_void_p], c_int),
        "SendMessageTransaction": ([c_void_p, c_void_p, CALLBACK, c_void_p, POINTER(CSendResult)], c_int),
        "CreateMessage": ([c_char_p], c_void_p),
        "DestroyMessage": ([c_void_p], c_int),
        "SetMessageKeys": ([c_void_p, c_char_p], c_int),
        "SetByteMessageBody": ([c_void_p, c_char_p, c_int], c_int),
        "GetOriginMessageKeys": ([c_void_p], c_char_p),
        "GetOriginMessageProperty": ([c_void_p, c_char_p], c_char_p),
        "GetMessageKeys": ([c_void_p], c_char_p),
        "GetMessageId": ([c_void_p], c_char_p),
        "GetMessageTopic": ([c_void_p], c_char_p),
        "GetMessageBody": ([c_void_p], c_char_p),
        "GetMessageProperty": ([c_void_p, c_char_p], c_char_p),
        "GetMessageQueueId": ([c_void_p], c_int),
        "GetMessageQueueOffset": ([c_void_p], c_longlong),
        "GetMessageCommitLogOffset": ([c_void_p], c_longlong),
        "GetLatestErrorMessage": ([], c_char_p),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib





def text(raw: bytes | None) -> str:
    return (raw or b"").decode(errors="replace")


def check(lib: ctypes.CDLL, rc: int, what: str) -> None:
    """A C API call's status: not 0 is a failure with the library's last error."""
    if rc != 0:
        raise RuntimeError(f"{what} returned {rc}: {text(lib.GetLatestErrorMessage())}")


class Transactions:
    """The producer, its two callbacks and the per-key plans they answer from."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg, self.lib = cfg, library()
        self.plans = {m["key"]: m for m in cfg["messages"]}
        self.checks: dict[str, int] = {}
        self.lock = threading.Lock()
        # the callbacks must outlive every call the library makes into them: kept on self
        self.executor, self.checker = CALLBACK(self.execute), CALLBACK(self.check_back)
        self.producer = self.lib.CreateTransactionProducer(cfg["group"].encode(), self.checker, None)
        if not self.producer:
            raise RuntimeError("CreateTransactionProducer returned NULL")
        check(self.lib, self.lib.SetProducerNameServerAddress(self.producer, cfg["nameSrv"].encode()), "nameSrv")
        check(self.lib, self.lib.StartProducer(self.producer), "StartProducer")
        self.helper: int | None = None

    def execute(self, _producer: int, msg: int, _data: int) -> int:
        """The local transaction: the key's ``local`` plan (UNKNOWN when anything goes wrong)."""
        try:
            key = text(self.lib.GetOriginMessageKeys(msg))
            answer = self.plans.get(key, {}).get("local", "UNKNOWN")
            prop = self.lib.GetOriginMessageProperty
            emit({"action": "execute", "key": key, "uniq": text(prop(msg, b"UNIQ_KEY")),
                  "result_transaction_id": text(prop(msg, b"__transactionId__")), "answer": answer, "ts": now_ms()})
            return STATUS[answer]
        except Exception as exc:  # noqa: BLE001 - a callback must answer: ctypes would return 0 (commit)
            emit({"action": "callback_error", "where": "execute", "error": repr(exc)})
            return STATUS["UNKNOWN"]

    def check_back(self, _producer: int, msg: int, _data: int) -> int:
        """The broker's check: the key's ``check`` plan, each call printed with its count."""
        try:
            lib = self.lib
            key = text(lib.GetMessageKeys(msg))
            answer = self.plans.get(key, {}).get("check", "UNKNOWN")
            with self.lock:
                n = self.checks[key] = self.checks.get(key, 0) + 1
            times = text(lib.GetMessageProperty(msg, b"TRANSACTION_CHECK_TIMES"))
            body = lib.GetMessageBody(msg) or b""
            emit({"action": "check", "key": key, "uniq": text(lib.GetMessageProperty(msg, b"UNIQ_KEY")),
                  "msgId": text(lib.GetMessageId(msg)), "check_times": int(times) if times.isdigit() else None,
                  "n": n, "answer": answer, "topic": text(lib.GetMessageTopic(msg)),
                  "queue_id": lib.GetMessageQueueId(msg), "queue_offset": lib.GetMessageQueueOffset(msg),
                  "commit_log_offset": lib.GetMessageCommitLogOffset(msg),
                  "sha256": hashlib.sha256(body).hexdigest(), "ts": now_ms()})
            return STATUS[answer]
        except Exception as exc:  # noqa: BLE001 - as in execute
            emit({"action": "callback_error", "where": "check", "error": repr(exc)})
            return STATUS["UNKNOWN"]

    def send(self, i: int, plan: dict[str, Any]) -> None:
        lib, body = self.lib, base64.b64decode(plan["body"])
        msg = lib.CreateMessage(self.cfg["topic"].encode())
        line: dict[str, Any] = {"action": "sent", "i": i, "key": plan["key"], "local": plan["local"],
                                "sha256": hashlib.sha256(body).hexdigest()}
        try:
            check(lib, lib.SetMessageKeys(msg, plan["key"].encode()), "SetMessageKeys")
            check(lib, lib.SetByteMessageBody(msg, body, len(body)), "SetByteMessageBody")
            result = CSendResult()
            check(lib, lib.SendMessageTransaction(self.producer, msg, self.executor, None, ctypes.byref(result)),
                  "SendMessageTransaction")
            line.update(ok=True, msgId=text(result.msgId), offset=result.offset, status=result.sendStatus)
        except RuntimeError as exc:
            line.update(ok=False, error=str(exc))
        finally:
            lib.DestroyMessage(msg)
        emit({**line, "ts": now_ms()})

    def start_helper(self, group: str) -> None:
        """A plain producer in this process: its start sends the client instance's heartbeat now."""
        self.helper = self.lib.CreateProducer(group.encode())
        check(self.lib, self.lib.SetProducerNameServerAddress(self.helper, self.cfg["nameSrv"].encode()), "nameSrv")
        check(self.lib, self.lib.StartProducer(self.helper), "StartProducer (heartbeat)")
        emit({"action": "heartbeat_helper", "group": group, "ts": now_ms()})

    def stop(self) -> None:
        for producer in (self.helper, self.producer):
            if producer:
                self.lib.ShutdownProducer(producer)
                self.lib.DestroyProducer(producer)


def main() -> int:
    with open(sys.argv[1]) as fh:
        cfg = json.load(fh)
    tx = Transactions(cfg)
    emit({"ready": True, "pid": os.getpid()})
    stop = threading.Event()

    def watch() -> None:
        sys.stdin.read()
        stop.set()
    threading.Thread(target=watch, daemon=True).start()
    interval = float(cfg.get("interval_ms", 0)) / 1000.0
    for i, plan in enumerate(cfg["messages"]):
        if stop.is_set():
            break
        tx.send(i, plan)
        if i == 0 and cfg.get("heartbeat_group"):
            tx.start_helper(cfg["heartbeat_group"])
        if interval:
            stop.wait(interval)
    emit({"action": "all_sent", "count": len(cfg["messages"]), "ts": now_ms()})
    stop.wait()
    tx.stop()
    emit({"done": True, "ts": now_ms()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
