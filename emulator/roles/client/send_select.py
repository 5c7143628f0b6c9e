"""Ordered sends: ``sendSelectImpl`` with ``SelectMessageQueueByHash`` (docs/rocketmq-model.md §3.7).

``send(msg, selector, key)`` finds the publish info as every send does (topic route, then the
createTopicKey's), picks ``list[|hashCode(key) % size|]`` from the **whole** publish list (no
latency-fault filtering, no broker exclusion) and makes **one** attempt on that queue within the
``sendMsgTimeout`` budget: no retry on another queue or broker, and nothing is written to the
fault strategy's latency table (``sendDefaultImpl`` does that, ``sendKernelImpl`` does not). A
missing master address fails the send ("The broker[<name>] not exist"); a broker answer other
than a stored result, a timeout or a refused connection fails it too. Every attempt is a
``send`` event with the key (``sharding_key``) and the size of the list it was chosen from
(``route_queues``); a failure is also a ``send.fail``.
"""

from __future__ import annotations

from rmqemu.emulator.protocol import Frame
from rmqemu.emulator.roles.client.route_cache import MessageQueue, TopicPublishInfo
from rmqemu.emulator.roles.client.send_flow import BROKER_NOT_EXIST_EXCEPTION, STORED_CODES, SendFlow, SendJob
from rmqemu.emulator.roles.client.subscription import java_string_hash
from rmqemu.emulator.roles.client.validators import MQClientError, no_name_server_error
from rmqemu.emulator.roles.common.base import Action, Now


def hash_index(key: str, size: int) -> int:
    """``SelectMessageQueueByHash``: ``value = key.hashCode() % size; if (value < 0) value =
    Math.abs(value)``. Java's ``%`` takes the dividend's sign, so this is ``|h| mod size`` for
    every int ``h``, ``Integer.MIN_VALUE`` included (the remainder is never MIN_VALUE itself)."""
    return abs(java_string_hash(key)) % size


def select_message_queue_by_hash(mqs: list[MessageQueue], key: str) -> MessageQueue:
    return mqs[hash_index(key, len(mqs))]


def no_route_select_error(topic: str) -> MQClientError:
    """``sendSelectImpl``'s own "no route" (not sendDefaultImpl's 10005 text): code -1."""
    return MQClientError(-1, f"No route info for this topic, {topic}")


class SelectSendFlow(SendFlow):
    """:class:`SendFlow` whose jobs with a ``sharding_key`` go the ``sendSelectImpl`` way."""

    def _with_route(self, job: SendJob, info: TopicPublishInfo | None, now: Now) -> list[Action]:
        if job.sharding_key is None:
            return super()._with_route(job, info, now)
        if info is not None and info.ok():
            return _select_attempt(self, job, info, now)
        return _no_route(self, job)


def _no_route(flow: SendFlow, job: SendJob) -> list[Action]:
    """``validateNameServerSetting``, then "No route info for this topic, <topic>"."""
    has_ns = flow.producer.instance.has_namesrv()
    exc = no_route_select_error(job.topic) if has_ns else no_name_server_error()
    text = str(exc) if has_ns else exc.message
    ev = flow._event(job, None, 1, "no_route" if has_ns else "error", exc.code, None, text)
    return [ev] + flow._fail(job, exc.code, text, attempts=0)


def _select_attempt(flow: SendFlow, job: SendJob, info: TopicPublishInfo, now: Now) -> list[Action]:
    """The one attempt of an ordered send, on the key's queue of ``info``."""
    assert job.sharding_key is not None
    job.route_queues = len(info.message_queues)
    mq = select_message_queue_by_hash(info.message_queues, job.sharding_key)
    if job.out_of_time(now):  # RemotingTooMuchRequestException
        return flow._fail(job, None, "sendSelectImpl call timeout", attempts=0)
    addr = flow.producer.instance.find_broker_address_in_publish(mq.broker_name)
    if addr is None:  # sendKernelImpl: the publish info is ok, so no refresh happens first
        text = f"The broker[{mq.broker_name}] not exist"
        ev = flow._event(job, mq, 1, "error", BROKER_NOT_EXIST_EXCEPTION, None, text)
        return [ev] + flow._fail(job, BROKER_NOT_EXIST_EXCEPTION, text, attempts=1)
    frame = flow._frame(job, mq, now)
    return [job.request(addr, frame, now, lambda resp, n: _on_reply(flow, job, mq, addr, now, resp, n))]


def _on_reply(flow: SendFlow, job: SendJob, mq: MessageQueue, addr: str, sent: Now,
              resp: Frame | None, now: Now) -> list[Action]:
    wall_latency = now.host_mono_ms - sent.host_mono_ms
    if resp is None:
        code, text, outcome = flow._no_answer(job, addr)
        ev = flow._event(job, mq, 1, outcome, code, wall_latency, text)
        return [ev] + flow._fail(job, code, text, attempts=1)
    if resp.code in STORED_CODES:  # a SendResult, whatever its status: the message is stored
        job.result = (mq, resp)
        return [flow._event(job, mq, 1, "ok", resp.code, wall_latency)] + flow._done(job, True)
    text = resp.remark or ""
    ev = flow._event(job, mq, 1, "error", resp.code, wall_latency, text)
    return [ev] + flow._fail(job, resp.code, text, attempts=1)
