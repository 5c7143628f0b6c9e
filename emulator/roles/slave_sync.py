"""SlaveSynchronize (facts 2.1): every 10 s (initial 3 s, scaled) a slave asks its master --
the ``masterAddr`` of the first successful REGISTER_BROKER answer -- for GET_ALL_TOPIC_CONFIG
and, when the master's DataVersion differs, adopts the whole table (broker.topic how=sync,
topics.json persisted).

Not emulated: consumer offsets, delay offsets and subscription-group sync. Messages reach a
slave through HA commit-log replication (ha.py, ha_client.py), not through this sync.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.protocol import Frame, RequestCode, ResponseCode, request
from emulator.roles.base import Action, Now, Request
from emulator.roles.topic_config import parse_wrapper

if TYPE_CHECKING:
    from emulator.roles.broker import Broker

SYNC_TIMEOUT_MS = 3000  # BrokerOuterAPI.getAllTopicConfig's invokeSync timeout


class SlaveSync:
    def __init__(self, broker: "Broker") -> None:
        self.b = broker

    def sync_all(self, now: Now) -> list[Action]:
        master = self.b.master_addr
        if not self.b.is_slave or not master or master == self.b.addr:
            return []
        return [Request(master, request(RequestCode.GET_ALL_TOPIC_CONFIG), self.b.ms(SYNC_TIMEOUT_MS), self._on_topics)]

    def _on_topics(self, resp: Frame | None, now: Now) -> list[Action]:
        if resp is None or resp.code != ResponseCode.SUCCESS:
            return []  # only logged in RocketMQ
        table, version = parse_wrapper(resp.json_body())
        return self.b.topics.adopt(table, version)
