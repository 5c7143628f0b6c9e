"""POP on a live master's remoting port (issue 42, docs/rocketmq-model.md §10.2): a pop answered in
5.x's binary form, an ack, a hostile handle, then a SIGKILL and restart of the master: the acked
message never comes back from the retry topic and the un-acked one does, one attempt later."""

from __future__ import annotations

import time
from typing import Any

from rmqemu.emulator.protocol import Frame, message_ext
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common import pop_keys as keys
from tests.integration.test_hostile_transactions import Conn

TOPO: dict[str, Any] = {
    "name": "pop-live", "timing": {"scale": 0.01}, "namesrvs": 1,
    "brokers": [{"name": "broker-a"}],
    "topics": [{"name": "PopT", "brokers": ["broker-a"], "queues": 1}],
    "remoting": True, "duration": "600s",
}
INVISIBLE = 300000  # cluster ms: 3 s of host time at scale 0.01, still running when the kill comes


def pop(conn: Conn) -> tuple[Frame, list[dict[str, Any]]]:
    fields = {"consumerGroup": "cg-pop", "topic": "PopT", "queueId": "-1", "maxMsgNums": "32",
              "invisibleTime": str(INVISIBLE), "pollTime": "0", "bornTime": "0", "initMode": "1", "order": "false"}
    resp = conn.ask(Frame(int(RC.POP_MESSAGE), fields=fields))
    assert resp is not None
    return resp, message_ext.decode_messages(resp.body) if resp.code == 0 else []


def handle(resp: Frame, m: dict[str, Any]) -> str:
    """What 5.x's client builds when the broker sent no POP_CK (a message of the topic itself)."""
    if keys.POP_CK in m["properties"]:
        return m["properties"][keys.POP_CK]
    f = resp.fields
    start = dict(((e.split(" ")[0], e.split(" ")[1]), e.split(" ")[2]) for e in str(f["startOffsetInfo"]).split(";"))
    return keys.build(int(start[("0", str(m["queueId"]))]), int(f["popTime"]), int(f["invisibleTime"]),
                      int(f["reviveQid"]), "PopT", "broker-a", int(m["queueId"]), int(m["queueOffset"]))


def ack(conn: Conn, extra: str, topic: str = "PopT") -> Frame | None:
    parts = extra.split(" ")
    return conn.ask(Frame(int(RC.ACK_MESSAGE), fields={
        "consumerGroup": "cg-pop", "topic": keys.real_topic(topic, "cg-pop", parts[4]), "queueId": parts[6],
        "extraInfo": extra, "offset": parts[7]}))


def test_pop_ack_and_a_kill_on_a_live_master(start_cluster) -> None:
    c = start_cluster(TOPO)
    conn = Conn(c.launcher.remoting_addrs["broker-a-0"])
    for uniq in ("u1", "u2"):
        props = message_ext.properties_to_string({"UNIQ_KEY": uniq, "KEYS": "k"})
        sent = conn.ask(Frame(int(RC.SEND_MESSAGE_V2), fields={
            "a": "pg", "b": "PopT", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": str(int(time.time() * 1000)),
            "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}, body=f"{uniq} ☃".encode()))
        assert sent is not None and sent.code == 0, sent
    resp, msgs = pop(conn)
    assert resp.code == 0, resp
    by = {m["properties"]["UNIQ_KEY"]: m for m in msgs}
    assert sorted(by) == ["u1", "u2"] and all(keys.POP_CK not in m["properties"] for m in msgs)  # 5.x's bytes
    first = ack(conn, handle(resp, by["u1"]))
    assert first is not None and first.code == 0, first
    hostile = ack(conn, "1 2 3 not-a-number 0 broker-a 0 0")
    assert hostile is not None and hostile.code == 1 and "NumberFormatException" in str(hostile.remark)
    # the ack is in the commit log before its answer: a SIGKILL now loses nothing of it
    kill = c.kill("broker-a-0", restart_after="5s")
    killed_at = time.monotonic()
    c.wait_for(lambda: not kill.active, 60, "broker-a-0 restarted")
    assert time.monotonic() - killed_at < INVISIBLE / 100 / 1000, "restarted after the lease ran out: retry the test"
    deadline = time.monotonic() + 60
    retried: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not retried:
        try:
            conn = Conn(c.launcher.remoting_addrs["broker-a-0"])
            resp, msgs = pop(conn)
        except OSError:
            time.sleep(0.2)
            continue
        for m in msgs:
            extra = handle(resp, m)
            if extra.split(" ")[4] == "1":
                retried.append(m)
            ack(conn, extra)
        time.sleep(0.1)
    assert [m["properties"]["UNIQ_KEY"] for m in retried] == ["u2"], retried  # revived by the restarted master
    assert retried[0]["reconsumeTimes"] == 1 and retried[0]["body"] == "u2 ☃".encode()
    # then nothing more: everything is acked, and u1 never came back from the retry topic
    time.sleep(1.0)
    assert pop(conn)[1] == []
