"""Builders shared by the broker tests (not a test module)."""

from __future__ import annotations

from typing import Any

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.broker.broker import Broker
from rmqemu.emulator.roles.common.node_spec import NodeSpec

from .fakes import Driver, FakeStore, FakeTime

NS1, NS2 = "127.0.0.1:9876", "127.0.0.1:9877"
MASTER_ADDR, SLAVE_ADDR = "127.0.0.1:10911", "127.0.0.1:10921"


def spec(broker_id: int = 0, config: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return {"name": f"broker-a-{broker_id}", "role": "broker", "broker": "broker-a", "broker_id": broker_id,
            "cluster": "DefaultCluster", "namesrv_addrs": [NS1, NS2], "seed": 7,
            "config": config or {}, **kw}


def broker(broker_id: int = 0, config: dict[str, Any] | None = None, store: FakeStore | None = None,
           time: FakeTime | None = None, start: bool = True) -> Driver:
    store = store if store is not None else FakeStore()
    addr = MASTER_ADDR if broker_id == 0 else SLAVE_ADDR
    d = Driver(Broker.from_spec(NodeSpec.from_dict(spec(broker_id, config)), addr, store), time=time, store=store)
    if start:
        d.start()
    return d


def send(d: Driver, topic: str, body: str = "hello", queue_id: int = 0, props: dict | None = None,
         code: int = RC.SEND_MESSAGE_V2, channel: str = "prod-ch", **fields: Any):
    header = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": props or {"UNIQ_KEY": f"U-{topic}-{queue_id}", "KEYS": "k"},
              "reconsumeTimes": 0, "unitMode": False, "batch": False, **fields}
    return d.send(code, header, body.encode(), channel=channel, peer="pg-0")


def heartbeat(d: Driver, client_id: str, group: str, topics: dict[str, int], channel: str,
              model: str = "CLUSTERING", tags: str = "*"):
    subs = [{"topic": t, "subString": tags, "tagsSet": [] if tags == "*" else tags.split("||"), "codeSet": [],
             "expressionType": "TAG", "subVersion": v, "classFilterMode": False} for t, v in topics.items()]
    body = {"clientID": client_id, "producerDataSet": [],
            "consumerDataSet": [{"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": model,
                                 "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": subs,
                                 "unitMode": False}]}
    return d.send(RC.HEART_BEAT, {}, body, channel=channel, peer=client_id)


def pull(d: Driver, topic: str, queue_id: int = 0, offset: int = 0, group: str = "cg", sys_flag: int = 0,
         sub_version: int = 0, suspend_ms: int = 150, channel: str = "cons-ch", **extra: Any):
    header = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
              "maxMsgNums": 32, "sysFlag": sys_flag, "commitOffset": 0, "suspendTimeoutMillis": suspend_ms,
              "subscription": "*", "subVersion": sub_version, "expressionType": "TAG", **extra}
    return d.send(RC.PULL_MESSAGE, header, channel=channel, peer="cg-0")
