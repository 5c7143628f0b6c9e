"""An orderly consumer's ``sendMessageBack`` (docs/rocketmq-model.md §4.9): what
``ConsumeMessageOrderlyService.checkReconsumeTimes`` does with a failed batch whose messages have
reached ``maxReconsumeTimes`` (never, by default: -1 means ``Integer.MAX_VALUE``).

Each such message is sent to ``%RETRY%<group>`` with RETRY_TOPIC, ORIGIN_MESSAGE_ID (set after
the properties are copied, 4.9.4), DELAY ``3 + reconsumeTimes`` and the reconsume counts in the
header (``sendKernelImpl`` moves them there for a %RETRY% topic); the broker then routes it to
the DLQ, since its count has reached the maximum. A message that could not be sent back is
counted and the batch is suspended, as is a batch holding any message below the maximum;
otherwise the batch is committed and consumption goes on. Simplification: the consumer's inner
producer (its own route, queue choice and retries) is one send to the queue's own master.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Frame, RequestCode, request
from rmqemu.emulator.roles.client.rebalance import ProcessQueue
from rmqemu.emulator.roles.client.send_flow import STORED_CODES
from rmqemu.emulator.roles.client.subscription import retry_topic
from rmqemu.emulator.roles.common.base import Action, Now, Request

if TYPE_CHECKING:
    from rmqemu.emulator.roles.client.orderly import OrderlyService

INNER_SEND_TIMEOUT_MS = 3000  # the inner producer's sendMsgTimeout


def send_back(service: "OrderlyService", pq: ProcessQueue, batch: list[dict[str, Any]],
              back: list[dict[str, Any]], now: Now) -> list[Action]:
    """Send ``back`` (the messages of ``batch`` at the maximum), then suspend or commit."""
    c = service.c
    results: dict[int, bool] = {}
    addr = c.instance.find_broker_address_in_publish(pq.mq.broker_name)

    def settle(n: Now) -> list[Action]:
        if len(results) < len(back):
            return []
        failed = [m for m in back if not results[id(m)]]
        if failed or len(back) < len(batch):  # suspend = any message not sent back
            return service.suspend(pq, batch, failed + [m for m in batch if m not in back])
        return service.commit(pq, batch) + service.run(pq, n)

    actions: list[Action] = []
    for m in back:
        if addr is None:
            results[id(m)] = False
            continue

        def on_reply(resp, rnow: Now, m: dict[str, Any] = m) -> list[Action]:
            results[id(m)] = resp is not None and resp.code in STORED_CODES
            return [] if pq.dropped else settle(rnow)

        actions.append(Request(addr, retry_frame(c.group, service.max_reconsume, m, now),
                               INNER_SEND_TIMEOUT_MS, on_reply))
    return actions + settle(now)


def retry_frame(group: str, max_reconsume: int, m: dict[str, Any], now: Now) -> Frame:
    """The SEND_MESSAGE_V2 of ``sendMessageBack`` for the pulled message ``m``."""
    props = dict(m.get("properties") or {})
    props.setdefault("ORIGIN_MESSAGE_ID", props.get("UNIQ_KEY") or m.get("msgId", ""))
    props["RETRY_TOPIC"] = m.get("topic", "")
    times = int(m.get("reconsumeTimes", 0))
    props["DELAY"] = str(3 + times)
    body = base64.b64decode(m["body64"]) if "body64" in m else str(m.get("body", "")).encode()
    fields = {"producerGroup": "CLIENT_INNER_PRODUCER", "topic": retry_topic(group),
              "defaultTopic": "TBW102", "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0,
              "bornTimestamp": int(now.wall_ms), "flag": 0, "properties": props, "reconsumeTimes": times,
              "maxReconsumeTimes": max_reconsume, "unitMode": False, "batch": False}
    return request(RequestCode.SEND_MESSAGE_V2, fields, body)
