"""``mqadmin``-like requests against a live cluster: topic routes, cluster list, topic creation.

These are the launcher's and the CLI's view of the data plane: single blocking requests through
``emulator.transport.oneshot``, with RocketMQ's request codes and header names.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from rmqemu.emulator.launcher.topology import TopicEntry
from rmqemu.emulator.protocol import Frame, RequestCode, ResponseCode, request
from rmqemu.errors import ControlError

ADMIN_TIMEOUT_MS = 3000.0
_calls = itertools.count(1)  # one identity per call: a new connection is never taken for an old one


def _call(addr: str, frame: Frame, timeout_ms: float) -> Frame:
    from rmqemu.emulator.transport.oneshot import request_once

    try:
        return request_once(addr, frame, timeout_ms, identity=f"admin-{os.getpid()}-{next(_calls)}")
    except Exception as exc:  # noqa: BLE001 - timeouts, refusals and zmq errors alike: one plain ControlError
        raise ControlError(f"{addr}: no answer to {RequestCode(frame.code).name} ({exc})") from None


def _ok(resp: Frame, what: str) -> Frame:
    if resp.code != ResponseCode.SUCCESS:
        raise ControlError(f"{what}: CODE: {resp.code}  DESC: {resp.remark}")
    return resp


def topic_route(namesrv_addr: str, topic: str, timeout_ms: float = ADMIN_TIMEOUT_MS) -> dict[str, Any]:
    """GET_ROUTEINFO_BY_TOPIC; raises with RocketMQ's TOPIC_NOT_EXIST remark when absent."""
    resp = _call(namesrv_addr, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), timeout_ms)
    return _ok(resp, f"topic-route {topic}").json_body()


def cluster_list(namesrv_addr: str, timeout_ms: float = ADMIN_TIMEOUT_MS) -> dict[str, Any]:
    """GET_BROKER_CLUSTER_INFO: brokerAddrTable and clusterAddrTable."""
    resp = _call(namesrv_addr, request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout_ms)
    return _ok(resp, "cluster-list").json_body()


def topic_list(namesrv_addr: str, timeout_ms: float = ADMIN_TIMEOUT_MS) -> list[str]:
    resp = _call(namesrv_addr, request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), timeout_ms)
    return list(_ok(resp, "topic-list").json_body().get("topicList", []))


def update_topic(broker_addr: str, topic: TopicEntry, timeout_ms: float = ADMIN_TIMEOUT_MS) -> None:
    """UPDATE_AND_CREATE_TOPIC on one broker (docs/rocketmq-model.md §2.7); the broker registers the change."""
    fields = {
        "topic": topic.name,
        "readQueueNums": topic.read_queues if topic.read_queues is not None else topic.queues,
        "writeQueueNums": topic.write_queues if topic.write_queues is not None else topic.queues,
        "perm": topic.perm,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": False,
    }
    if topic.message_type is not None:  # 5.x's topic attribute (docs/rocketmq-model.md §10.5)
        fields["attributes"] = f"+message.type={topic.message_type}"
    resp = _call(broker_addr, request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields), timeout_ms)
    _ok(resp, f"update-topic {topic.name} on {broker_addr}")
