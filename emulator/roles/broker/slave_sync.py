"""SlaveSynchronize (docs/rocketmq-model.md §2.1): every 10 s (initial 3 s) a slave asks its master -- the
``masterAddr`` of the first successful REGISTER_BROKER answer -- for, one after the other as
``syncAll`` does:

- GET_ALL_TOPIC_CONFIG (21): when the master's DataVersion differs, the slave adopts the whole
  table (broker.topic how=sync, topics.json persisted);
- GET_ALL_CONSUMER_OFFSET (43): the master's ConsumerOffsetManager as JSON
  ``{"offsetTable": {"topic@group": {"queueId": offset}}}``. The slave ``putAll``s it into its own
  table -- each ``topic@group`` entry the master has replaces the slave's whole entry; entries only
  the slave has stay -- and persists consumerOffset.json. So an offset a client committed to the
  slave while the master was out of the route (4.9.4 clients commit to the master, else after a
  route refresh to any address, docs/rocketmq-model.md §4.8) is overwritten by the master's next
  answer, and a slave that becomes the address clients use
  answers QUERY_CONSUMER_OFFSET with offsets at most one sync period old.

- GET_ALL_DELAY_OFFSET (45): the master's delay offsets (docs/rocketmq-model.md §2.9), written to
  ``config/delayOffset.json`` as they came; the slave's own table is left alone (only a node that
  starts as a master reads that file, and an emulated slave never becomes one).

And every 3 s (5.x: "latency-sensitive, so sync it more frequently"; a classic slave's first after
10 s, a DLedger follower's after 3 s), while the broker's timer store is not delivering:

- GET_TIMER_CHECK_POINT (60): the master's timer checkpoint (docs/rocketmq-model.md §10.4), whose
  read time and queue offset the slave takes as its own (``config/timercheck``), so a DLedger
  follower that becomes master starts its wheel where the old master was at most 3 s before.

Each request fails on its own (timeout or error: only logged in RocketMQ), and the next still
goes. Not emulated: subscription-group sync. Messages reach a slave through HA commit-log
replication (ha.py, ha_client.py), not through this sync.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from rmqemu.emulator.protocol import Frame, RequestCode, ResponseCode, request
from rmqemu.emulator.roles.broker.schedule import DELAY_OFFSET_JSON
from rmqemu.emulator.roles.common.base import Action, Cancel, Every, Now, Persist, Request
from rmqemu.emulator.roles.common.topic_config import parse_wrapper

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

TIMER_SYNC = "timer_sync"
SYNC_TIMEOUT_MS = 3000  # BrokerOuterAPI.getAllTopicConfig's / getAllConsumerOffset's invokeSync timeout


def parse_offset_table(body: object) -> dict[str, dict[int, int]]:
    """A GET_ALL_CONSUMER_OFFSET body as ``{"topic@group": {queueId: offset}}``; ValueError if
    it is not one (the slave then keeps its table, as a failed decode does in RocketMQ)."""
    table = body.get("offsetTable") if isinstance(body, dict) else None
    if not isinstance(table, dict):
        raise ValueError("no offsetTable")
    try:
        return {str(key): {int(q): int(o) for q, o in queues.items()} for key, queues in table.items()}
    except (AttributeError, TypeError) as e:
        raise ValueError(str(e)) from e


class SlaveSync:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def sync_all(self, now: Now) -> list[Action]:
        master = self._master()
        if master is None:
            return []
        return [Request(master, request(RequestCode.GET_ALL_TOPIC_CONFIG), SYNC_TIMEOUT_MS, self._on_topics)]

    def timer_schedule(self, first_ms: int) -> list[Action]:
        """The checkpoint's sync, every 3 s from ``first_ms``, when the broker has a timer store."""
        if not self.broker.store_cfg.timerWheelEnable:
            return []
        return [Cancel(TIMER_SYNC), Every(TIMER_SYNC, 3000, first_ms)]

    def sync_timer_checkpoint(self, now: Now) -> list[Action]:
        """``syncTimerCheckPoint``: not while this broker's own store delivers."""
        if self.broker.timer.started:
            return []
        return self._next(RequestCode.GET_TIMER_CHECK_POINT, self._on_timer_checkpoint)

    def _on_timer_checkpoint(self, resp: Frame | None, now: Now) -> list[Action]:
        if resp is None or resp.code != ResponseCode.SUCCESS:
            return []  # "syncTimerCheckPoint Exception": only logged
        try:
            body = resp.json_body()
            read_ms, offset = int(body["lastReadTimeMs"]), int(body["masterTimerQueueOffset"])
        except (ValueError, TypeError, KeyError, AttributeError):  # BadFrame too
            return []
        return self.broker.timer.adopt(read_ms, offset)

    def _master(self) -> str | None:
        master = self.broker.master_addr
        if not self.broker.is_slave or not master or master == self.broker.addr:
            return None
        return master

    def _on_topics(self, resp: Frame | None, now: Now) -> list[Action]:
        actions: list[Action] = []
        if resp is not None and resp.code == ResponseCode.SUCCESS:  # otherwise only logged
            table, version = parse_wrapper(resp.json_body())
            actions += self.broker.topics.adopt(table, version)
        return actions + self._sync_consumer_offset()

    def _sync_consumer_offset(self) -> list[Action]:
        return self._next(RequestCode.GET_ALL_CONSUMER_OFFSET, self._on_offsets)

    def _next(self, code: int, on_reply: Callable[[Frame | None, Now], list[Action]]) -> list[Action]:
        master = self._master()  # re-read: masterAddr may have changed while the last one was asked
        if master is None:
            return []
        return [Request(master, request(code), SYNC_TIMEOUT_MS, on_reply)]

    def _on_offsets(self, resp: Frame | None, now: Now) -> list[Action]:
        return self._adopt_offsets(resp) + self._next(RequestCode.GET_ALL_DELAY_OFFSET, self._on_delay_offsets)

    def _adopt_offsets(self, resp: Frame | None) -> list[Action]:
        if resp is None or resp.code != ResponseCode.SUCCESS:
            return []  # "SyncConsumerOffset Exception": only logged
        try:
            table = parse_offset_table(resp.json_body())
        except ValueError:  # BadFrame too
            return []
        offsets = self.broker.offsets
        offsets.table.update(table)  # offsetTable.putAll: per topic@group key, not a replacement
        return [offsets.persist()]

    def _on_delay_offsets(self, resp: Frame | None, now: Now) -> list[Action]:
        """``syncDelayOffset``: ``MixAll.string2File(body, delayOffset.json)``, nothing else."""
        if resp is None or resp.code != ResponseCode.SUCCESS or not resp.body:
            return []
        return [Persist(DELAY_OFFSET_JSON, resp.body.decode("utf-8", errors="replace"))]
