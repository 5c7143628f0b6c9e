"""ClientManageProcessor + ConsumerManageProcessor: HEART_BEAT (34), UNREGISTER_CLIENT (35),
GET_CONSUMER_LIST_BY_GROUP (38), QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15)
(docs/rocketmq-model.md §4.2, §4.3), and GET_ALL_CONSUMER_OFFSET (43), which RocketMQ serves from
AdminBrokerProcessor: the whole offset table, what a slave's SlaveSynchronize adopts (slave_sync).

A slave answers QUERY_CONSUMER_OFFSET from its synced table and accepts UPDATE_CONSUMER_OFFSET
(4.9.4 clients commit to the master, else after a route refresh to any address: the slave
while the master is out of the route, docs/rocketmq-model.md §4.8); its next sync from the master
overwrites such commits (docs/rocketmq-model.md §2.1).

HEART_BEAT body (HeartbeatData): ``{clientID, producerDataSet: [{groupName}], consumerDataSet:
[{groupName, consumeType, messageModel, consumeFromWhere, subscriptionDataSet: [...], unitMode}]}``.
A change of a group's channels or subscriptions sends NOTIFY_CONSUMER_IDS_CHANGED (40) as a
oneway ``Reply`` with header ``consumerGroup`` on every channel of the group.

QUERY_CONSUMER_OFFSET with no committed offset follows ``ConsumerManageProcessor``: when the
queue's min offset is <= 0 and offset 0 is not "on disk" (the emulator keeps every message in
memory, so it never is), it answers SUCCESS with offset **0** -- the RocketMQ behaviour that makes
a brand-new CONSUME_FROM_LAST_OFFSET group start at the beginning while the data is in page
cache. Otherwise QUERY_NOT_FOUND (22) ``"Not found, V3_0_6_SNAPSHOT maybe this group consumer
boot first"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqemu.emulator.protocol import Perm, RequestCode, oneway
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.consumer_manager import ClientChannelInfo, ConsumerGroupInfo, membership
from rmqemu.emulator.roles.common.base import Action, Inbound, Now, Reply
from rmqemu.emulator.roles.common.server_dispatch import h_int, h_str
from rmqemu.emulator.roles.common.topic_config import RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

RW = Perm.READ | Perm.WRITE


class ClientProcessor:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def notify_change(self, cgi: ConsumerGroupInfo) -> list[Action]:
        """The CHANGE event of DefaultConsumerIdsChangeListener."""
        if not self.broker.cfg.notifyConsumerIdsChangedEnable:
            return []
        frame = oneway(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": cgi.groupName})
        return [Reply(ch, frame) for ch in cgi.channels]

    def heart_beat(self, msg: Inbound, now: Now) -> list[Action]:
        b = self.broker
        data = msg.frame.json_body() or {}
        client_id = str(data.get("clientID", ""))
        actions: list[Action] = []
        for cd in data.get("consumerDataSet") or []:
            group = str(cd["groupName"])
            sgc, persists = b.sub_groups.find(group)
            actions += persists
            notify = sgc.notifyConsumerIdsChangedEnable if sgc else True
            if sgc is not None:  # %RETRY%<group>, retryQueueNums queues, RW (docs/rocketmq-model.md §4.2 step 2)
                sys_flag = 2 if cd.get("unitMode") else 0
                _, acts, created = b.topics.create_in_send_message_back_method(
                    RETRY_GROUP_TOPIC_PREFIX + group, sgc.retryQueueNums, RW, sys_flag, now.wall_ms)
                actions += acts
                if created:
                    actions += b.registrar.register_all(now, oneway_=True, force=True)
            subs = [dict(s) for s in cd.get("subscriptionDataSet") or []]
            info = ClientChannelInfo(msg.channel, client_id, now.wall_ms, msg.peer)
            changed, joined = b.consumers.register_consumer(
                group, info, str(cd.get("consumeType", "CONSUME_PASSIVELY")),
                str(cd.get("messageModel", "CLUSTERING")), str(cd.get("consumeFromWhere", "CONSUME_FROM_LAST_OFFSET")),
                subs)
            if joined:
                actions.append(membership(group, info, "joined", len(b.consumers.table[group].channels)))
            if changed and notify:
                actions += self.notify_change(b.consumers.table[group])
        for pd in data.get("producerDataSet") or []:
            b.producers.register_producer(str(pd["groupName"]), ClientChannelInfo(msg.channel, client_id, now.wall_ms))
        return [*actions, Reply(msg.channel, msg.frame.response(R.SUCCESS))]

    def unregister_client(self, msg: Inbound, now: Now) -> list[Action]:
        """Header: clientID, producerGroup, consumerGroup."""
        b, f = self.broker, msg.frame
        actions: list[Action] = []
        pg = h_str(f, "producerGroup")
        if pg:
            b.producers.unregister_producer(pg, msg.channel)
        cg = h_str(f, "consumerGroup")
        if cg:
            sgc, persists = b.sub_groups.find(cg)
            actions += persists
            cgi, lines = b.consumers.unregister_consumer(cg, msg.channel)
            actions += lines
            if cgi is not None and (sgc.notifyConsumerIdsChangedEnable if sgc else True):
                actions += self.notify_change(cgi)
        return [*actions, Reply(msg.channel, f.response(R.SUCCESS))]

    def get_consumer_list_by_group(self, msg: Inbound, now: Now) -> list[Action]:
        """Header consumerGroup -> ``{"consumerIdList": [...]}`` in channel order (unsorted)."""
        group = h_str(msg.frame, "consumerGroup", required=True)
        cgi = self.broker.consumers.table.get(group)
        ids = cgi.client_ids() if cgi else []
        if not ids:
            return [Reply(msg.channel, msg.frame.response(R.SYSTEM_ERROR, f"no consumer for this group, {group}"))]
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS, body={"consumerIdList": ids}))]

    def query_consumer_offset(self, msg: Inbound, now: Now) -> list[Action]:
        b, f = self.broker, msg.frame
        group = h_str(f, "consumerGroup", required=True)
        topic = h_str(f, "topic", required=True)
        queue_id = h_int(f, "queueId", required=True)
        offset = b.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return [Reply(msg.channel, f.response(R.SUCCESS, fields={"offset": offset}))]
        if b.store.min_offset(topic, queue_id) <= 0:  # and offset 0 is never "in disk" here
            return [Reply(msg.channel, f.response(R.SUCCESS, fields={"offset": 0}))]
        remark = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        return [Reply(msg.channel, f.response(R.QUERY_NOT_FOUND, remark))]

    def update_consumer_offset(self, msg: Inbound, now: Now) -> list[Action]:
        """Header: consumerGroup, topic, queueId, commitOffset; flushed by the offset_flush timer."""
        f = msg.frame
        self.broker.offsets.commit_offset(h_str(f, "consumerGroup", required=True), h_str(f, "topic", required=True),
                                     h_int(f, "queueId", required=True), h_int(f, "commitOffset", required=True))
        return [Reply(msg.channel, f.response(R.SUCCESS))]

    def get_all_consumer_offset(self, msg: Inbound, now: Now) -> list[Action]:
        """``ConsumerOffsetManager.encode()``: ``{"offsetTable": {"topic@group": {"queueId":
        offset}}}``, the same JSON as consumerOffset.json. Any broker answers it, a slave too.
        (RocketMQ's "No consumer offset in this broker" needs an empty encoding, which an empty
        table is not.)"""
        table = {key: {str(q): o for q, o in sorted(qs.items())} for key, qs in self.broker.offsets.table.items()}
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS, body={"offsetTable": table}))]
