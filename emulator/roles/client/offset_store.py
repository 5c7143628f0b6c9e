"""Consumer offsets in memory (docs/rocketmq-model.md §4.5, §4.7): ``RemoteBrokerOffsetStore`` for CLUSTERING
(committed by UPDATE_CONSUMER_OFFSET to the queue's master, or after a route refresh to its
slave while the master is out of the route, docs/rocketmq-model.md §4.8) and ``LocalFileOffsetStore`` for
BROADCASTING (persisted to ``offsets.json`` in the node's store dir, restored on restart)."""

from __future__ import annotations

import json
from typing import Callable

from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.common.base import Persist

LOCAL_OFFSETS_FILE = "offsets.json"


class OffsetStore:
    def __init__(self, local_file: bool) -> None:
        self.local_file = local_file
        self.table: dict[MessageQueue, int] = {}

    def read_memory(self, mq: MessageQueue) -> int:
        return self.table.get(mq, -1)

    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """``updateOffset``: with ``increase_only`` an offset never moves back."""
        if offset < 0:
            return
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    def persist_local(self) -> Persist:
        rows = [[mq.topic, mq.broker_name, mq.queue_id, off] for mq, off in sorted(self.table.items())]
        return Persist(LOCAL_OFFSETS_FILE, json.dumps({"offsetTable": rows}))

    def restore_local(self, read_store: Callable[[str], str | None]) -> None:
        text = read_store(LOCAL_OFFSETS_FILE)
        if not text:
            return
        try:
            for topic, broker, qid, off in json.loads(text).get("offsetTable", []):
                self.table[MessageQueue(topic, broker, int(qid))] = int(off)
        except (ValueError, TypeError, AttributeError):
            self.table.clear()  # a torn file: start from the broker-side defaults
