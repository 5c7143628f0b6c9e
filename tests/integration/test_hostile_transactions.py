"""Hostile END_TRANSACTION on a live master's remoting port (issue 41): a wrong offset, an unknown
group, a repeated commit, a forged ``fromTransactionCheck``, a type the broker ignores. Each gets
4.9.4's answer (docs/rocketmq-model.md §9.3) over the real socket, the broker keeps serving, and its
store holds exactly what those answers say: the half, the message twice (4.9.4's commit is not
idempotent), one op mark per valid end, and the half replicated to the slave.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from rmqemu.emulator.protocol import Frame, remoting
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol.message_ext import properties_to_string

TOPO: dict[str, Any] = {
    "name": "hostile-tx", "timing": {"scale": 0.01}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 1, "transactionCheckInterval": 3600000}],  # no check meanwhile
    "topics": [{"name": "TxTopic", "brokers": ["broker-a"], "queues": 2}],
    "remoting": True, "duration": "600s",
}


class Conn:
    """One remoting connection: a request and its answer, or no answer within ``wait_s``."""

    def __init__(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.decoder = remoting.StreamDecoder()
        self.opaque = 0

    def ask(self, frame: Frame, wait_s: float = 10.0) -> Frame | None:
        self.opaque += 1
        self.sock.sendall(remoting.encode(frame.with_opaque(self.opaque)))
        self.sock.settimeout(wait_s)
        try:
            while True:
                data = self.sock.recv(65536)
                assert data, "the broker closed a well-formed request's connection"
                for got in self.decoder.feed(data):
                    if got.opaque == self.opaque:
                        return got
        except TimeoutError:
            return None


def end(conn: Conn, state: int, commit_log: int, kind: int = 8, group: str = "pg",
        from_check: bool = False) -> Frame | None:
    fields = {"producerGroup": group, "tranStateTableOffset": str(state), "commitLogOffset": str(commit_log),
              "commitOrRollback": str(kind), "msgId": "u1", "fromTransactionCheck": str(from_check).lower()}
    return conn.ask(Frame(int(RC.END_TRANSACTION), fields=fields), wait_s=10.0 if kind else 1.0)


def test_hostile_ends_get_4_9_4s_answers_and_the_store_holds_what_they_say(start_cluster) -> None:
    c = start_cluster(TOPO)
    conn = Conn(c.launcher.remoting_addrs["broker-a-0"])
    props = properties_to_string({"UNIQ_KEY": "u1", "TRAN_MSG": "true", "PGROUP": "pg", "KEYS": "k"})
    sent = conn.ask(Frame(int(RC.SEND_MESSAGE_V2), fields={
        "a": "pg", "b": "TxTopic", "c": "TBW102", "d": "4", "e": "1", "f": "4", "g": str(int(time.time() * 1000)),
        "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}, body="naïve ☃".encode()))
    assert sent is not None and sent.code == 0, sent
    state, commit_log = int(sent.fields["queueOffset"]), int(str(sent.fields["msgId"])[-16:], 16)
    answers = [
        end(conn, state, commit_log + 7),
        end(conn, state, commit_log, group="intruders"),
        end(conn, state + 5, commit_log, kind=12),
    ]
    assert [(a.code, a.remark) if a is not None else None for a in answers] == [
        (1, "Find prepared transaction message failed"), (1, "The producer group wrong"),
        (1, "The transaction state table offset wrong")]
    assert end(conn, state, commit_log, kind=0) is None  # type 0: 4.9.4 writes no answer at all
    first = end(conn, state, commit_log)
    again = end(conn, state, commit_log, from_check=True)  # forged: a check nobody sent
    assert first is not None and first.code == 0 and again is not None and again.code == 0
    deadline = time.monotonic() + 30
    while True:
        master, slave = c.state("broker-a-0")["queues"], c.state("broker-a-1")["queues"]
        want = {"RMQ_SYS_TRANS_HALF_TOPIC:0": 1, "RMQ_SYS_TRANS_OP_HALF_TOPIC:0": 2, "TxTopic:1": 2}
        if all(master.get(k) == v and slave.get(k) == v for k, v in want.items()):
            break
        assert time.monotonic() < deadline, (master, slave)
        time.sleep(0.1)
    results = [e["result"] for e in c.events("tx.end")]
    assert results.count("ok") == 2 and results.count("ignored") == 1 and "slave" not in results
    assert not c.events("node.error"), c.events("node.error")[:3]
