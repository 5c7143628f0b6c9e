"""The broker role: BrokerController's wiring of managers, processors and scheduled tasks.

State machines live in the helpers (topic_config_manager, message_store, consumer_manager);
request handling in the processors (send, pull, client, admin); namesrv traffic in
broker_outer_api; the slave's topic and consumer-offset sync in slave_sync; commit-log replication in ha (master side,
every broker) and ha_client (a slave's loop). This module owns identity, timers and channel events.

Timers (RocketMQ's intervals in cluster ms; the node runtime applies ``timing.scale``):

- ``register``: ``Every(10000, max(10000, min(registerNameServerPeriod, 60000)))`` (docs/rocketmq-model.md §2.1)
- ``client_scan``: ``Every(10000, 10000)``, ClientHousekeepingService, 120 s idle (docs/rocketmq-model.md §4.2)
- ``offset_flush``: ``Every(10000, flushConsumerOffsetInterval)``, consumerOffset.json
- ``slave_sync``: ``Every(3000, 10000)`` on a slave (docs/rocketmq-model.md §2.1)
- ``pull:<n>``: one ``After`` per held long-polling pull
- ``pull_hold_check``: on a slave, ``Every(5000)`` (``shortPollingTimeMills`` without long polling):
  PullRequestHoldService's periodic check, the only wake-up a slave's held pulls get -- RocketMQ's
  reput notifies arrivals only when ``brokerRole != SLAVE``
- ``ha_hold:<n>``, ``ha_wait:<n>``, ``ha_push`` (ha.py) and ``ha_retry`` (ha_client.py)
- ``schedule:<level>`` and ``delay_offset_flush`` on a master (schedule.py, docs/rocketmq-model.md §2.9)
- ``tx_check`` on a master: the transaction check service (transaction/check_service.py, docs/rocketmq-model.md §9)
- ``timer:wheel`` and ``timer:flush`` on a master: 5.x timed messages (timer/store.py, docs/rocketmq-model.md §10.4)
- ``pop_revive``, ``pop_order_flush``, ``pop_hold:<n>``: RocketMQ 5's POP (pop/service.py, docs/rocketmq-model.md §10.2)
"""

from __future__ import annotations

import random
from typing import Any, Callable

from rmqemu.emulator.protocol import MASTER_ID, EmulatorCode
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.broker.admin_processor import AdminProcessor
from rmqemu.emulator.roles.broker.broker_outer_api import NamesrvRegistrar
from rmqemu.emulator.roles.broker.client_processor import ClientProcessor
from rmqemu.emulator.roles.broker.consumer_manager import (
    CHANNEL_EXPIRED_TIMEOUT,
    ConsumerManager,
    ConsumerOffsetManager,
    ProducerManager,
    SubscriptionGroupManager,
)
from rmqemu.emulator.roles.broker.dledger_commit_log import DLedgerCommitLog
from rmqemu.emulator.roles.broker.ha import HAService
from rmqemu.emulator.roles.broker.ha_client import RETRY_TIMER as HA_RETRY
from rmqemu.emulator.roles.broker.ha_client import HAClient
from rmqemu.emulator.roles.broker.pop.service import PopService
from rmqemu.emulator.roles.broker.pull_processor import PullProcessor
from rmqemu.emulator.roles.broker.queue_processor import QueueProcessor
from rmqemu.emulator.roles.broker.role_change import POLL_TIMER as ROLE_CHANGE_POLL
from rmqemu.emulator.roles.broker.role_change import RoleChange
from rmqemu.emulator.roles.broker.schedule import FLUSH_TIMER, TIMER_PREFIX, ScheduleService
from rmqemu.emulator.roles.broker.send_back import SendBack
from rmqemu.emulator.roles.broker.send_processor import SendProcessor
from rmqemu.emulator.roles.broker.slave_sync import TIMER_SYNC, SlaveSync
from rmqemu.emulator.roles.broker.timer.store import TIMERS as TIMER_STORE_TIMERS
from rmqemu.emulator.roles.broker.timer.store import TimerStore
from rmqemu.emulator.roles.broker.timer.topic_config_processor import get_topic_config
from rmqemu.emulator.roles.broker.topic_config_manager import TopicConfigManager
from rmqemu.emulator.roles.broker.transaction.bridge import TransactionBridge
from rmqemu.emulator.roles.broker.transaction.check_service import TIMER as TX_CHECK
from rmqemu.emulator.roles.broker.transaction.check_service import CheckService
from rmqemu.emulator.roles.broker.transaction.end_processor import EndTransactionProcessor
from rmqemu.emulator.roles.common.base import Action, ChannelEvent, CloseChannel, Every, Inbound, Now, Role
from rmqemu.emulator.roles.common.broker_config import BrokerConfigs, broker_configs_from_dict
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.common.server_dispatch import Handler, dispatch
from rmqemu.emulator.roles.dledger.server import CODES as DLEDGER_CODES
from rmqemu.emulator.roles.real_clients import WireLog
from rmqemu.emulator.roles.store.message_store import MessageStore
from rmqemu.emulator.roles.store.restore import restore

StoreReader = Callable[[str], "str | None"]


class Broker(Role):
    role = "broker"

    def __init__(
        self, name: str, addr: str, configs: BrokerConfigs, namesrv_addrs: list[str],
        seed: int = 0, read_store: StoreReader = lambda p: None,
    ) -> None:
        super().__init__(name, addr)
        self.configs = configs
        self.cfg = configs.broker
        self.store_cfg = configs.store
        if self.store_cfg.enableDLegerCommitLog:  # BrokerStartup: the role-change handler gives the id
            self.cfg.brokerId = -1
        elif self.cfg.brokerId != MASTER_ID:
            self.store_cfg.brokerRole = "SLAVE"
        self.broker_id = self.cfg.brokerId
        host, _, port = addr.rpartition(":")
        self.cfg.brokerIP1 = self.cfg.brokerIP2 = host or self.cfg.brokerIP1
        # haServerAddr = brokerIP2:haListenPort, the HA port being listenPort + 1 (docs/rocketmq-model.md §2.1)
        self.ha_server_addr = f"{self.cfg.brokerIP2}:{int(port or 0) + 1}"
        self.namesrv_addrs = list(namesrv_addrs)
        self.rng = random.Random(seed)
        self.read_store = read_store
        self.master_addr: str | None = None
        self.remoting_addr: str | None = None  # the remoting port real clients use; registered with the namesrvs

        self.topics = TopicConfigManager(self.cfg, self.broker_id, self.store_cfg.timerWheelEnable)
        self.store = MessageStore(addr, self.is_slave, self.cfg.offsetCheckInSlave)
        self.consumers = ConsumerManager()
        self.producers = ProducerManager()
        self.sub_groups = SubscriptionGroupManager(self.cfg.autoCreateSubscriptionGroup)
        self.offsets = ConsumerOffsetManager()
        self.schedule = ScheduleService(self)
        self.timer = TimerStore(self)

        self.registrar = NamesrvRegistrar(self)
        self.sender = SendProcessor(self)
        self.send_back = SendBack(self)
        self.puller = PullProcessor(self)
        self.clients = ClientProcessor(self)
        self.admin = AdminProcessor(self)
        self.queues = QueueProcessor(self)
        self.wire = WireLog(name, self.cfg.brokerName, self.broker_id, self.store.look_message_by_offset, addr)
        self.slave_sync = SlaveSync(self)
        self.ha = HAService(self)
        self.ha_client = HAClient(self)
        self.role_change = RoleChange(self)
        self.transactions = TransactionBridge(self)
        self.tx_check = CheckService(self)
        self.end_transaction = EndTransactionProcessor(self)
        self.pop = PopService(self)
        self.dledger = DLedgerCommitLog(self, seed) if self.store_cfg.enableDLegerCommitLog else None
        self.handlers: dict[int, Handler] = {
            RC.SEND_MESSAGE: self.sender.send_message,
            RC.SEND_MESSAGE_V2: self.sender.send_message,
            RC.SEND_BATCH_MESSAGE: self.sender.send_message,
            RC.CONSUMER_SEND_MSG_BACK: self.send_back.consumer_send_msg_back,
            RC.END_TRANSACTION: self.end_transaction.end_transaction,
            RC.PULL_MESSAGE: self.puller.pull_message,
            RC.HEART_BEAT: self.clients.heart_beat,
            RC.UNREGISTER_CLIENT: self.clients.unregister_client,
            RC.GET_CONSUMER_LIST_BY_GROUP: self.clients.get_consumer_list_by_group,
            RC.QUERY_CONSUMER_OFFSET: self.clients.query_consumer_offset,
            RC.UPDATE_CONSUMER_OFFSET: self.clients.update_consumer_offset,
            RC.GET_ALL_CONSUMER_OFFSET: self.clients.get_all_consumer_offset,
            RC.GET_ALL_DELAY_OFFSET: self.admin.get_all_delay_offset,
            RC.GET_TIMER_CHECK_POINT: self.admin.get_timer_check_point,
            RC.UPDATE_AND_CREATE_TOPIC: self.admin.update_and_create_topic,
            RC.DELETE_TOPIC_IN_BROKER: self.admin.delete_topic_in_broker,
            RC.GET_ALL_TOPIC_CONFIG: self.admin.get_all_topic_config,
            RC.GET_TOPIC_CONFIG: lambda msg, now: get_topic_config(self, msg, now),
            RC.GET_MAX_OFFSET: self.admin.get_max_offset,
            RC.GET_MIN_OFFSET: self.queues.get_min_offset,
            RC.SEARCH_OFFSET_BY_TIMESTAMP: self.queues.search_offset_by_timestamp,
            RC.LOCK_BATCH_MQ: self.queues.lock_batch_mq,
            RC.UNLOCK_BATCH_MQ: self.queues.unlock_batch_mq,
            EmulatorCode.HA_TRANSFER: self.ha.on_transfer_request,
            **self.pop.handlers(),
        }
        if self.dledger is not None:
            self.handlers.update(dict.fromkeys(DLEDGER_CODES, self.dledger.server.on_request))

    @property
    def is_slave(self) -> bool:
        """``brokerRole == SLAVE``: fixed for a classic broker, moving with elections in DLedger mode."""
        return self.store_cfg.brokerRole == "SLAVE"

    def put_record(self, topic: str, queue_id: int, body: bytes | str, props: dict[str, str], now: Now,
                   **kw: Any) -> tuple[dict[str, Any] | None, list[Action], str | None]:
        """The commit log's put: the store's own, or DLedger's (emulator/roles/broker/dledger_commit_log.py),
        which may refuse it (None and the put status)."""
        if self.dledger is not None:
            return self.dledger.put(topic, queue_id, body, props, now, **kw)
        record, append = self.store.put(topic, queue_id, body, props, now.wall_ms, **kw)
        return record, [append], None

    def put_copy(self, rec: dict[str, Any], topic: str, queue_id: int, props: dict[str, str], now: Now,
                 **kw: Any) -> tuple[dict[str, Any] | None, list[Action], str | None]:
        """A held record (a delay level's, a timed message's) put into its real queue with ``props``:
        its body, born time and host, flags and reconsume times as they were."""
        return self.put_record(topic, queue_id, body_bytes(rec), props, now, born_timestamp=rec.get("bornTimestamp", 0),
                               reconsume_times=rec.get("reconsumeTimes", 0), flag=rec.get("flag", 0),
                               sys_flag=rec.get("sysFlag", 0), born_host=rec.get("bornHost", ""), **kw)

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: StoreReader) -> "Broker":
        configs = broker_configs_from_dict(dict(spec.config))
        configs.broker.brokerName = spec.broker or configs.broker.brokerName
        configs.broker.brokerId = spec.broker_id or 0
        configs.broker.brokerClusterName = spec.cluster or configs.broker.brokerClusterName
        broker = cls(spec.name, addr, configs, list(spec.namesrv_addrs), spec.seed, read_store)
        broker.remoting_addr = spec.remoting
        if spec.remoting:  # storeHost is where clients reach the broker: msgIds name the remoting port
            broker.store.store_host = spec.remoting
        return broker

    # ------------------------------------------------------------------ lifecycle

    def start(self, now: Now) -> list[Action]:
        """Load topics (emitting broker.topic), restore the store, schedule, then register (force)."""
        actions: list[Action] = self.topics.load(self.read_store, now.wall_ms)
        self.sub_groups.load(self.read_store)
        self.offsets.load(self.read_store)
        restored = restore(self.store, self.read_store, list(dict.fromkeys([
            *((t, q) for t, tc in self.topics.table.items() for q in range(max(tc.readQueueNums, tc.writeQueueNums))),
            *self.schedule.queues(), *self.transactions.queues(), *self.timer.queues(), *self.pop.queues()])))
        actions += [a for p in restored.problems for a in p.actions(self.name)]
        self.schedule.load(self.read_store)
        self.timer.load(self.read_store)
        period = max(10000, min(self.cfg.registerNameServerPeriod, 60000))
        actions += [
            Every("register", 10000, period),
            Every("client_scan", 10000, 10000),
            Every("offset_flush", 10000, self.cfg.flushConsumerOffsetInterval),
        ]
        actions += self.pop.start(now)
        check = 5000 if self.cfg.longPollingEnable else self.cfg.shortPollingTimeMills
        if self.dledger is not None:  # no role, no registration until the member's first role change
            self.dledger.restored()
            return actions + [Every("pull_hold_check", check, check)] + self.dledger.server.start(now)
        if not self.is_slave:  # handleScheduleMessageService and startProcessorByHa: masters only
            actions += self.schedule.start(now) + self.tx_check.start() + self.timer.start(now)
        if self.is_slave:
            actions.append(Every("slave_sync", 3000, 10000))
            actions += self.slave_sync.timer_schedule(10000)
            actions.append(Every("pull_hold_check", check, check))
        actions += self.registrar.register_all(now, oneway_=False, force=True)
        return actions

    def stop(self, now: Now) -> list[Action]:
        """``shutdown()``: unregister from every namesrv, flush consumer and delay offsets."""
        return [*self.registrar.unregister_all(), self.offsets.persist(), *self.schedule.stop(), *self.timer.stop(),
                *self.pop.stop()]

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        self.wire.request(msg)
        return self.wire.observe(dispatch(self.handlers, msg, now))

    def on_timer(self, name: str, now: Now) -> list[Action]:
        return self.wire.observe(self._on_timer(name, now))

    def _on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "register":
            return self.registrar.register_all(now, oneway_=False, force=self.cfg.forceRegister)
        if name == "client_scan":
            timeout = CHANNEL_EXPIRED_TIMEOUT
            closed, lines = self.consumers.scan_not_active_channel(now.wall_ms, timeout)
            closed += self.producers.scan_not_active_channel(now.wall_ms, timeout)
            return [*lines, *(CloseChannel(ch) for ch in dict.fromkeys(closed))]
        if name == "offset_flush":
            return [self.offsets.persist()] if self.offsets.dirty else []
        if name == "slave_sync":
            return self.slave_sync.sync_all(now)
        if name == TIMER_SYNC:
            return self.slave_sync.sync_timer_checkpoint(now)
        if name.startswith("pull:"):
            return self.puller.on_hold_timeout(name, now)
        if name == "pull_hold_check":
            return self.puller.check_hold_requests(now)
        if name.startswith("ha_hold:"):
            return self.ha.on_hold_timeout(name, now)
        if name.startswith("ha_wait:"):
            return self.ha.on_wait_timeout(name, now)
        if name == "ha_push":
            return self.ha.push_held(now)
        if name == HA_RETRY:
            return self.ha_client.on_retry(now)
        if name.startswith(TIMER_PREFIX) or name == FLUSH_TIMER:
            return self.schedule.on_timer(name, now)
        if name in TIMER_STORE_TIMERS:
            return self.timer.on_timer(name, now)
        if name == TX_CHECK:
            return [] if self.is_slave else self.tx_check.check(now)
        if self.pop.owns_timer(name):
            return self.pop.on_timer(name, now)
        if name == ROLE_CHANGE_POLL:
            return self.role_change.poll(now)
        if self.dledger is not None and name.startswith("dledger:"):
            return self.dledger.server.on_timer(name, now)
        return []

    def on_clock(self, now: Now) -> list[Action]:
        actions = self.schedule.on_clock(now) + self.timer.on_clock(now)
        return self.wire.observe(actions + (self.dledger.server.on_clock(now) if self.dledger else []))

    def on_peers(self, peers: dict[str, str], now: Now) -> list[Action]:
        """A DLedger peer learns where its group's peers listen (their node names are in ``dLegerPeers``)."""
        if self.dledger is not None:
            self.dledger.server.set_addresses(peers)
        return []

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        """ClientHousekeepingService: close/idle -> doChannelCloseEvent at once (docs/rocketmq-model.md §4.2); an
        HA connection or a SYNC send waiting on the channel goes too. Our outbound channel to
        the master dropping closes the slave's HA connection."""
        if event.kind == "disconnected":
            return self.ha_client.on_disconnected(event.addr, now) if self.is_slave and not self.dledger else []
        if event.kind not in ("closed", "idle") or event.channel is None:
            return []
        self.wire.drop_channel(event.channel)
        self.producers.do_channel_close_event(event.channel)
        actions: list[Action] = self.puller.drop_channel(event.channel) + self.ha.drop_channel(event.channel)
        actions += self.pop.drop_channel(event.channel)
        groups, lines = self.consumers.do_channel_close_event(event.channel, event.kind)
        actions += lines
        for cgi in groups:
            actions += self.clients.notify_change(cgi)
        return actions

    def on_register_result(self, master_addr: str | None, ha_addr: str | None, now: Now) -> list[Action]:
        """The first successful REGISTER_BROKER answer: ``slaveSynchronize.setMasterAddr``
        (also to None when the namesrv knows no live master) and ``updateHaMasterAddress``
        (only to a non-null address, docs/rocketmq-model.md §2.1)."""
        if not self.is_slave:
            return []
        self.master_addr = master_addr
        return self.ha_client.update_master(master_addr, now) if self.dledger is None else []

    def state(self) -> dict[str, Any]:
        return {
            "broker": self.cfg.brokerName, "broker_id": self.broker_id, "addr": self.addr,
            "role": self.store_cfg.brokerRole, "master_addr": self.master_addr,
            "topics": self.topics.snapshot(), "queues": self.store.snapshot(),
            "consumers": self.consumers.snapshot(), "producers": self.producers.snapshot(),
            "offsets": {k: {str(q): o for q, o in v.items()} for k, v in self.offsets.table.items()},
            "held_pulls": self.puller.held_count(), "locks": self.queues.locks.snapshot(), "pop": self.pop.snapshot(),
            "schedule": self.schedule.snapshot(), "timer": self.timer.snapshot(),
            "ha": {**self.ha.snapshot(), **({"client": self.ha_client.snapshot()} if self.is_slave else {})},
            **({"dledger": self.dledger.snapshot()} if self.dledger is not None else {}),
        }
