"""The NameServer role: DefaultRequestProcessor + BrokerHousekeepingService + the expiry scan.

State lives in :class:`RouteInfoManager`; this module decodes requests, stamps liveness with the
namesrv's own skewable wall clock (``now.wall_ms``, docs/rocketmq-model.md §1.9 last paragraph) and turns table
changes into ``ns.broker`` / ``ns.route`` events (docs/design.md §6). Namesrvs never talk to each other
(docs/rocketmq-model.md §1.9): this role only ever returns ``Reply`` and ``CloseChannel``.

Events:

- ``ns.broker`` ``{broker_addr, broker, broker_id, change}``: ``register`` when a live entry
  *appears* (a re-register of an address that is already live is not an event, even on a new
  channel), ``role`` when a live address registers under another brokerId (a DLedger peer
  promoted or demoted), ``replaced`` for the address that held a brokerId another one now
  registered under, ``unregister`` (UNREGISTER_BROKER of a live address), ``channel_destroy`` (its
  channel closed or went idle), ``expired`` (the scan found it silent for more than 120 s).
- ``ns.route`` ``{topic, queue_datas: [{broker, read, write, perm}], masters}``: for each topic
  whose queue data or set of brokers-with-a-master changed, after the request or event that
  changed it. A topic that disappears gets ``queue_datas: []`` and ``masters: []``.
"""

from __future__ import annotations

from typing import Any, Callable

from rmqemu.emulator.protocol import FAQ_SUFFIX, ResponseCode, is_remoting
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol.message_ext import crc32
from rmqemu.emulator.roles.common.base import Action, ChannelEvent, CloseChannel, Emit, Every, Inbound, Now, Reply, Role
from rmqemu.emulator.roles.common.broker_config import NamesrvConfigs, namesrv_configs_from_dict
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.common.server_dispatch import Handler, dispatch, h_int, h_str
from rmqemu.emulator.roles.common.topic_config import parse_wrapper
from rmqemu.emulator.roles.namesrv.route_info import BROKER_CHANNEL_EXPIRED_TIME, Removed, RouteInfoManager
from rmqemu.emulator.roles.real_clients import WireLog

SCAN_INITIAL_MS = 5000  # docs/rocketmq-model.md §1.4: scheduleAtFixedRate(scanNotActiveBroker, 5, 10, SECONDS)
SCAN_PERIOD_MS = 10000


class NameServer(Role):
    role = "namesrv"

    def __init__(self, name: str, addr: str, configs: NamesrvConfigs | None = None) -> None:
        super().__init__(name, addr)
        self.configs = configs or namesrv_configs_from_dict({})
        self.rim = RouteInfoManager()
        self.wire = WireLog(name)
        self.handlers: dict[int, Handler] = {
            RC.REGISTER_BROKER: self._register_broker,
            RC.QUERY_DATA_VERSION: self._query_data_version,
            RC.UNREGISTER_BROKER: self._unregister_broker,
            RC.GET_ROUTEINFO_BY_TOPIC: self._get_route_info_by_topic,
            RC.GET_BROKER_CLUSTER_INFO: self._get_broker_cluster_info,
            RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self._get_all_topic_list,
            RC.DELETE_TOPIC_IN_NAMESRV: self._delete_topic,
            RC.WIPE_WRITE_PERM_OF_BROKER: self._wipe_write_perm,
            RC.ADD_WRITE_PERM_OF_BROKER: self._add_write_perm,
            RC.GET_KVLIST_BY_NAMESPACE: self._get_kv_list,
        }

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> "NameServer":
        return cls(spec.name, addr, namesrv_configs_from_dict(dict(spec.config)))

    # ------------------------------------------------------------------ Role interface

    def start(self, now: Now) -> list[Action]:
        return [Every("scan", SCAN_INITIAL_MS, SCAN_PERIOD_MS)]

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        self.wire.request(msg)
        return self.wire.observe(dispatch(self.handlers, msg, now))

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "scan":
            return self._scan_not_active_broker(now)
        return []

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        """BrokerHousekeepingService (docs/rocketmq-model.md §1.5): close and idle destroy at once; open is a no-op."""
        if event.kind not in ("closed", "idle") or event.channel is None:
            return []
        self.wire.drop_channel(event.channel)
        with self._route_diff() as out:
            removed = self.rim.on_channel_destroy(event.channel)
            if removed is not None:
                out.insert(0, self._broker_event(removed, "channel_destroy"))
        return out

    def state(self) -> dict[str, Any]:
        return self.rim.snapshot()

    # ------------------------------------------------------------------ events

    def _route_diff(self, broker: str | None = None) -> "_RouteDiff":
        return _RouteDiff(self.rim, broker)

    @staticmethod
    def _broker_event(r: Removed, change: str) -> Emit:
        return Emit("ns.broker", {"broker_addr": r.addr, "broker": r.brokerName, "broker_id": r.brokerId,
                                  "change": change})

    # ------------------------------------------------------------------ expiry

    def _scan_not_active_broker(self, now: Now) -> list[Action]:
        """docs/rocketmq-model.md §1.4: ``last + 120000 < now`` (strict): close, remove, onChannelDestroy."""
        actions: list[Action] = []
        for addr, live in self.rim.expired(now.wall_ms, BROKER_CHANNEL_EXPIRED_TIME):
            name, broker_id = self._name_and_id(addr)
            if live.channel is not None:
                actions.append(CloseChannel(live.channel))
            with self._route_diff() as out:
                del self.rim.brokerLiveTable[addr]
                self.rim.filterServerTable.pop(addr, None)
                out.append(self._broker_event(Removed(addr, name, broker_id), "expired"))
                # the entry is gone, so onChannelDestroy falls back to the address (docs/rocketmq-model.md §1.5)
                self.rim.on_channel_destroy(None, remote_addr=addr)
            actions.extend(out)
        return actions

    def _name_and_id(self, addr: str) -> tuple[str | None, int | None]:
        for name, bd in self.rim.brokerAddrTable.items():
            for i, a in bd.brokerAddrs.items():
                if a == addr:
                    return name, i
        return None, None

    # ------------------------------------------------------------------ handlers

    def _register_broker(self, msg: Inbound, now: Now) -> list[Action]:
        f = msg.frame
        addr = h_str(f, "brokerAddr", required=True)
        name = h_str(f, "brokerName", required=True)
        broker_id = h_int(f, "brokerId", required=True)
        cluster = h_str(f, "clusterName", required=True)
        crc = h_int(f, "bodyCrc32", 0) or 0
        if crc != 0 and crc32(f.body) != crc:
            return [Reply(msg.channel, f.response(ResponseCode.SYSTEM_ERROR, "crc32 not match"))]
        body = f.json_body() or {}  # empty body: DataVersion 0/0 and no topics (docs/rocketmq-model.md §1.3)
        topics, version = parse_wrapper(body.get("topicConfigSerializeWrapper"))
        filters = body.get("filterServerList")
        with self._route_diff(name) as out:
            result = self.rim.register_broker(
                cluster, addr, name, broker_id, h_str(f, "haServerAddr"), topics, version,
                filters, msg.channel, now.wall_ms, h_str(f, "remotingAddr"),
            )
            if result.new_live_entry:
                out.append(Emit("ns.broker", {"broker_addr": addr, "broker": name, "broker_id": broker_id,
                                              "change": "register"}))
            elif result.new_at_id:
                out.append(Emit("ns.broker", {"broker_addr": addr, "broker": name, "broker_id": broker_id,
                                              "change": "role"}))
            if result.replaced_addr is not None:
                out.append(Emit("ns.broker", {"broker_addr": result.replaced_addr, "broker": name,
                                              "broker_id": broker_id, "change": "replaced"}))
        resp = f.response(
            ResponseCode.SUCCESS,
            fields={"masterAddr": result.masterAddr, "haServerAddr": result.haServerAddr},
            body={"table": {}},  # the ORDER_TOPIC_CONFIG KV table; the emulator keeps none
        )
        return [*out, Reply(msg.channel, resp)]

    def _query_data_version(self, msg: Inbound, now: Now) -> list[Action]:
        """docs/rocketmq-model.md §1.3 last paragraph: an unchanged version refreshes the liveness stamp."""
        f = msg.frame
        addr = h_str(f, "brokerAddr", required=True)
        _, version = parse_wrapper({"dataVersion": f.json_body()})
        changed = self.rim.is_broker_topic_config_changed(addr, version)
        if not changed:
            self.rim.update_broker_info_update_timestamp(addr, now.wall_ms)
        stored = self.rim.query_broker_topic_config(addr)
        body = stored.to_json() if stored is not None else None
        return [Reply(msg.channel, f.response(ResponseCode.SUCCESS, fields={"changed": changed}, body=body))]

    def _unregister_broker(self, msg: Inbound, now: Now) -> list[Action]:
        f = msg.frame
        with self._route_diff() as out:
            removed = self.rim.unregister_broker(
                h_str(f, "clusterName", required=True), h_str(f, "brokerAddr", required=True),
                h_str(f, "brokerName", required=True), h_int(f, "brokerId", required=True),
            )
            if removed is not None:
                out.append(self._broker_event(removed, "unregister"))
        return [*out, Reply(msg.channel, f.response(ResponseCode.SUCCESS))]  # always SUCCESS (1.6)

    def _get_route_info_by_topic(self, msg: Inbound, now: Now) -> list[Action]:
        f = msg.frame
        topic = h_str(f, "topic", required=True)
        route = self.rim.pickup_topic_route_data(topic)
        if route is None:
            remark = "No topic route info in name server for the topic: " + topic + FAQ_SUFFIX
            return [Reply(msg.channel, f.response(ResponseCode.TOPIC_NOT_EXIST, remark))]
        if is_remoting(msg.channel):
            route = self.rim.for_real_clients(route)
        return [Reply(msg.channel, f.response(ResponseCode.SUCCESS, body=route))]

    def _get_broker_cluster_info(self, msg: Inbound, now: Now) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(ResponseCode.SUCCESS, body=self.rim.cluster_info()))]

    def _get_all_topic_list(self, msg: Inbound, now: Now) -> list[Action]:
        body = {"topicList": sorted(self.rim.topicQueueTable)}
        return [Reply(msg.channel, msg.frame.response(ResponseCode.SUCCESS, body=body))]

    def _delete_topic(self, msg: Inbound, now: Now) -> list[Action]:
        topic = h_str(msg.frame, "topic", required=True)
        with self._route_diff() as out:
            self.rim.delete_topic(topic)
        return [*out, Reply(msg.channel, msg.frame.response(ResponseCode.SUCCESS))]

    def _wipe_write_perm(self, msg: Inbound, now: Now) -> list[Action]:
        return self._change_write_perm(msg, add=False, count_field="wipeTopicCount")

    def _add_write_perm(self, msg: Inbound, now: Now) -> list[Action]:
        return self._change_write_perm(msg, add=True, count_field="addTopicCount")

    def _change_write_perm(self, msg: Inbound, add: bool, count_field: str) -> list[Action]:
        name = h_str(msg.frame, "brokerName", required=True)
        with self._route_diff() as out:
            count = self.rim.change_write_perm(name, add)
        return [*out, Reply(msg.channel, msg.frame.response(ResponseCode.SUCCESS, fields={count_field: count}))]

    def _get_kv_list(self, msg: Inbound, now: Now) -> list[Action]:
        """The emulator keeps no KV config: every namespace is empty (QUERY_NOT_FOUND)."""
        ns = h_str(msg.frame, "namespace", "")
        remark = f"No config item, Namespace: {ns}"
        return [Reply(msg.channel, msg.frame.response(ResponseCode.QUERY_NOT_FOUND, remark))]


class _RouteDiff:
    """``with`` block: snapshot every topic's route view, and on exit append ``ns.route`` events
    (sorted by topic) for the views that changed to the list the block works on.

    ``broker``: the block only changes that broker name's entries (a registration), so only the
    topics that hold a queue of it before or after can change; the others are not looked at.
    The diff of all topics per registration was most of a namesrv's CPU in a 56-node cluster."""

    def __init__(self, rim: RouteInfoManager, broker: str | None = None) -> None:
        self.rim = rim
        self.broker = broker
        self.out: list[Action] = []

    def _views(self) -> dict[str, dict[str, Any]]:
        if self.broker is None:
            return self.rim.all_route_views()
        return {t: v for t, qds in self.rim.topicQueueTable.items()
                if self.broker in qds and (v := self.rim.route_view(t)) is not None}

    def __enter__(self) -> list[Action]:
        self.before = self._views()
        return self.out

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            return
        after = self._views()
        empty = {"queue_datas": [], "masters": []}
        for topic in sorted(set(self.before) | set(after)):
            old, new = self.before.get(topic), after.get(topic)
            if old != new:
                self.out.append(Emit("ns.route", {"topic": topic, **(new or empty)}))
