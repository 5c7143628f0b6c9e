"""The NameServer's RouteInfoManager: its five tables and the operations on them (docs/rocketmq-model.md §1.1-1.7).

Pure data: no actions, no events. Each mutating method returns what the namesrv role needs to
emit (which live entry appeared or went away); the role diffs per-topic route views for
``ns.route``. Tables are plain dicts; Python's insertion order stands in for HashMap order.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rmqemu.emulator.protocol import MASTER_ID, Perm
from rmqemu.emulator.roles.common.topic_config import DataVersion, TopicConfig
from rmqemu.emulator.roles.namesrv.route_data import BrokerData, BrokerLiveInfo, QueueData, RegisterResult, Removed

BROKER_CHANNEL_EXPIRED_TIME = 1000 * 60 * 2  # docs/rocketmq-model.md §1.2: 120 000 ms


class RouteInfoManager:
    def __init__(self) -> None:
        self.topicQueueTable: dict[str, dict[str, QueueData]] = {}
        self.brokerAddrTable: dict[str, BrokerData] = {}
        self.clusterAddrTable: dict[str, dict[str, None]] = {}  # an insertion-ordered set
        self.brokerLiveTable: dict[str, BrokerLiveInfo] = {}
        self.filterServerTable: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ register / unregister

    def register_broker(
        self,
        cluster: str,
        addr: str,
        name: str,
        broker_id: int,
        ha_server_addr: str | None,
        topics: dict[str, TopicConfig] | None,
        version: DataVersion,
        filter_servers: list[str] | None,
        channel: str | None,
        wall_ms: float,
        remoting_addr: str | None = None,
    ) -> RegisterResult:
        """``RouteInfoManager.registerBroker`` (docs/rocketmq-model.md §1.3), step numbers in comments."""
        self.clusterAddrTable.setdefault(cluster, {})[name] = None  # 1
        register_first = False
        bd = self.brokerAddrTable.get(name)  # 2
        if bd is None:
            register_first = True
            bd = self.brokerAddrTable[name] = BrokerData(cluster, name)
        # 3: same addr under another id (slave promoted to master, or the reverse) is dropped
        for other_id in [i for i, a in bd.brokerAddrs.items() if a == addr and i != broker_id]:
            del bd.brokerAddrs[other_id]
        old_addr = bd.brokerAddrs.get(broker_id)
        bd.brokerAddrs[broker_id] = addr
        register_first = register_first or old_addr is None
        # 4: only the master's registration touches queue data, and only on a new dataVersion
        if topics is not None and broker_id == MASTER_ID:
            if self.is_broker_topic_config_changed(addr, version) or register_first:
                for tc in topics.values():
                    self._create_and_update_queue_data(name, tc)
        # 5: topics are never removed here (issue #288)
        # 6: the live entry is replaced, stamped with the namesrv's own clock
        new_live = addr not in self.brokerLiveTable
        self.brokerLiveTable[addr] = BrokerLiveInfo(wall_ms, version, channel, ha_server_addr, remoting_addr)
        if filter_servers is not None:  # 7
            if filter_servers:
                self.filterServerTable[addr] = list(filter_servers)
            else:
                self.filterServerTable.pop(addr, None)
        master_addr = ha = None
        if broker_id != MASTER_ID:  # 8
            m = bd.brokerAddrs.get(MASTER_ID)
            if m is not None and m in self.brokerLiveTable:
                master_addr, ha = m, self.brokerLiveTable[m].haServerAddr
        replaced = old_addr if old_addr not in (None, addr) else None
        return RegisterResult(master_addr, ha, new_live, old_addr != addr, replaced)

    def _create_and_update_queue_data(self, name: str, tc: TopicConfig) -> None:
        qd = QueueData(name, tc.readQueueNums, tc.writeQueueNums, tc.perm, tc.topicSysFlag)
        self.topicQueueTable.setdefault(tc.topicName, {})[name] = qd

    def is_broker_topic_config_changed(self, addr: str, version: DataVersion) -> bool:
        """docs/rocketmq-model.md §1.3 step 9: changed when there is no live info or the versions differ."""
        prev = self.brokerLiveTable.get(addr)
        return prev is None or prev.dataVersion != version

    def update_broker_info_update_timestamp(self, addr: str, wall_ms: float) -> None:
        live = self.brokerLiveTable.get(addr)
        if live is not None:
            live.lastUpdateTimestamp = wall_ms

    def query_broker_topic_config(self, addr: str) -> DataVersion | None:
        live = self.brokerLiveTable.get(addr)
        return live.dataVersion if live else None

    def unregister_broker(self, cluster: str, addr: str, name: str, broker_id: int) -> Removed | None:
        """docs/rocketmq-model.md §1.6: removal by **id** (onChannelDestroy removes by address)."""
        had_live = self.brokerLiveTable.pop(addr, None) is not None
        self.filterServerTable.pop(addr, None)
        bd = self.brokerAddrTable.get(name)
        if bd is not None:
            bd.brokerAddrs.pop(broker_id, None)
            if not bd.brokerAddrs:
                del self.brokerAddrTable[name]
                names = self.clusterAddrTable.get(cluster)
                if names is not None:
                    names.pop(name, None)
                    if not names:
                        del self.clusterAddrTable[cluster]
                self._remove_topic_by_broker_name(name)
        return Removed(addr, name, broker_id) if had_live else None

    def on_channel_destroy(self, channel: str | None, remote_addr: str | None = None) -> Removed | None:
        """docs/rocketmq-model.md §1.5: find the addr by channel (else ``remote_addr``) and cascade by **address**.

        Returns the removed live entry, or None when the channel belonged to no live broker and
        no ``remote_addr`` was given (a client's channel, or a broker whose channel was replaced
        by a newer registration).
        """
        addr = self.addr_of_channel(channel) if channel is not None else None
        addr = addr or remote_addr
        if addr is None:
            return None
        had_live = self.brokerLiveTable.pop(addr, None) is not None
        self.filterServerTable.pop(addr, None)
        found_name: str | None = None
        found_id: int | None = None
        for name, bd in list(self.brokerAddrTable.items()):
            ids = [i for i, a in bd.brokerAddrs.items() if a == addr]
            if not ids:
                continue
            found_name, found_id = name, ids[0]
            del bd.brokerAddrs[found_id]
            if not bd.brokerAddrs:
                del self.brokerAddrTable[name]
                for cluster, names in list(self.clusterAddrTable.items()):
                    if name in names:
                        del names[name]
                        if not names:
                            del self.clusterAddrTable[cluster]
                        break
                # docs/rocketmq-model.md §1.5: only when the whole broker name is gone does its queue data go
                self._remove_topic_by_broker_name(name)
            break
        if not had_live and found_name is None:
            return None
        return Removed(addr, found_name, found_id)

    def addr_of_channel(self, channel: str) -> str | None:
        for addr, live in self.brokerLiveTable.items():
            if live.channel == channel:
                return addr
        return None

    def expired(self, wall_ms: float, expired_after_ms: float) -> list[tuple[str, BrokerLiveInfo]]:
        """Live entries with ``last + expiry < now`` (strictly; docs/rocketmq-model.md §1.4)."""
        return [
            (addr, live)
            for addr, live in self.brokerLiveTable.items()
            if live.lastUpdateTimestamp + expired_after_ms < wall_ms
        ]

    def _remove_topic_by_broker_name(self, name: str) -> None:
        for topic in list(self.topicQueueTable):
            qds = self.topicQueueTable[topic]
            qds.pop(name, None)
            if not qds:
                del self.topicQueueTable[topic]

    # ------------------------------------------------------------------ admin

    def delete_topic(self, topic: str) -> None:
        self.topicQueueTable.pop(topic, None)

    def change_write_perm(self, broker_name: str, add: bool) -> int:
        """WIPE_WRITE_PERM_OF_BROKER (205) / ADD_WRITE_PERM_OF_BROKER (327): topics touched."""
        count = 0
        for qds in self.topicQueueTable.values():
            qd = qds.get(broker_name)
            if qd is not None:
                # RouteInfoManager.operateWritePermOfBroker (4.9.2+): wipe clears the write
                # bit; add *sets* READ|WRITE, so an INHERIT bit (TBW102's) does not come back
                perm = Perm.READ | Perm.WRITE if add else qd.perm & ~Perm.WRITE
                qds[broker_name] = replace(qd, perm=perm)
                count += 1
        return count

    # ------------------------------------------------------------------ reads

    def pickup_topic_route_data(self, topic: str) -> dict[str, Any] | None:
        """docs/rocketmq-model.md §1.7: all queue datas (no perm filter); null unless >= 1 QueueData and BrokerData."""
        qds = self.topicQueueTable.get(topic)
        if not qds:
            return None
        names = sorted(qds)  # QueueData sorts by brokerName (docs/rocketmq-model.md §1.1); HashMap order otherwise
        broker_datas = [self.brokerAddrTable[n].to_json() for n in names if n in self.brokerAddrTable]
        if not broker_datas:
            return None
        filter_table: dict[str, list[str]] = {}
        if self.filterServerTable:
            for bd in broker_datas:
                for addr in bd["brokerAddrs"].values():
                    if addr in self.filterServerTable:
                        filter_table[addr] = list(self.filterServerTable[addr])
        return {
            "orderTopicConf": None,
            "queueDatas": [qds[n].to_json() for n in names],
            "brokerDatas": broker_datas,
            "filterServerTable": filter_table,
        }

    def for_real_clients(self, route: dict[str, Any]) -> dict[str, Any]:
        """A route answered on the remoting port: each broker address becomes that broker's remoting
        address; a broker without one (registered before it had one) is left out of brokerAddrs."""
        live = self.brokerLiveTable
        datas = []
        for bd in route["brokerDatas"]:
            addrs = {i: live[a].remotingAddr for i, a in bd["brokerAddrs"].items()
                     if a in live and live[a].remotingAddr}
            datas.append({**bd, "brokerAddrs": addrs})
        return {**route, "brokerDatas": datas, "filterServerTable": {}}

    def route_view(self, topic: str) -> dict[str, Any] | None:
        """The ``ns.route`` payload for one topic, or None when the topic has no queue data."""
        qds = self.topicQueueTable.get(topic)
        if not qds:
            return None
        names = sorted(qds)
        return {
            "queue_datas": [
                {"broker": n, "read": qds[n].readQueueNums, "write": qds[n].writeQueueNums, "perm": qds[n].perm}
                for n in names
            ],
            "masters": [n for n in names
                        if n in self.brokerAddrTable and MASTER_ID in self.brokerAddrTable[n].brokerAddrs],
        }

    def all_route_views(self) -> dict[str, dict[str, Any]]:
        return {t: v for t in self.topicQueueTable if (v := self.route_view(t)) is not None}

    def cluster_info(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {n: bd.to_json() for n, bd in self.brokerAddrTable.items()},
            "clusterAddrTable": {c: list(names) for c, names in self.clusterAddrTable.items()},
        }

    def snapshot(self) -> dict[str, Any]:
        """All five tables, JSON-able (``state()``)."""
        return {
            "topicQueueTable": {t: {n: qd.to_json() for n, qd in qds.items()}
                                for t, qds in self.topicQueueTable.items()},
            **self.cluster_info(),
            "brokerLiveTable": {
                a: {
                    "lastUpdateTimestamp": live.lastUpdateTimestamp,
                    "dataVersion": live.dataVersion.to_json(),
                    "channel": live.channel,
                    "haServerAddr": live.haServerAddr,
                }
                for a, live in self.brokerLiveTable.items()
            },
            "filterServerTable": {a: list(v) for a, v in self.filterServerTable.items()},
        }
