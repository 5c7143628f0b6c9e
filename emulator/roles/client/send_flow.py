"""``DefaultMQProducerImpl.sendDefaultImpl`` as a state machine (docs/rocketmq-model.md §3.2, §3.3, §3.4).

A :class:`SendJob` is one ``send()`` call (one message or one batch). Its steps are driven by
namesrv and broker replies: find the publish info (topic route, then the createTopicKey route),
then attempts. Sync mode makes ``1 + retryTimesWhenSendFailed`` attempts, each on a queue chosen
away from the previous attempt's broker, retrying on a timeout, a missing master, or a broker
code of :data:`RETRY_RESPONSE_CODES`; async mode makes one attempt and retries only failures to
get an answer, up to ``retryTimesWhenSendAsyncFailed`` times, re-sending **the same request
(same queueId)** to another broker, as ``MQClientAPIImpl.onExceptionImpl`` does; oneway makes one
attempt. Every attempt emits a ``send`` event; a message that finally fails emits ``send.fail``.

Time: the send budget, the latencies ``MQFaultStrategy`` judges and the numbers in RocketMQ's
error texts are cluster ms (``Now.mono_ms``); the ``send`` event's ``latency_ms`` is wall ms
(``Now.host_mono_ms``), as docs/events.md says. The budget's wall-clock floor
(``minSendTimeoutWallMs``) is measured on the host clock and handed to the runtime with each
request, so no scale is needed here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from rmqemu.emulator.protocol import FAQ_SUFFIX, Frame, RequestCode, ResponseCode, oneway, request
from rmqemu.emulator.roles.client.route_cache import MessageQueue, TopicPublishInfo
from rmqemu.emulator.roles.client.validators import MQClientError, check_message, no_name_server_error, no_route_error
from rmqemu.emulator.roles.client.workload import OutgoingMessage, is_half
from rmqemu.emulator.roles.common.base import Action, Emit, Now, Oneway, ReplyHandler, Request
from rmqemu.emulator.roles.common.message import body_fields
from rmqemu.emulator.roles.common.sysflag import PREPARED_TYPE

if TYPE_CHECKING:
    from rmqemu.emulator.roles.client.producer import Producer

# docs/rocketmq-model.md §3.2: the broker codes a sync send retries on (4.9.2+ ``retryResponseCodes``).
RETRY_RESPONSE_CODES = frozenset({17, 14, 1, 16, 204, 205})
STORED_CODES = frozenset({0, 10, 11, 12})  # SEND_OK, FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT
CONNECT_BROKER_EXCEPTION, ACCESS_BROKER_TIMEOUT, BROKER_NOT_EXIST_EXCEPTION = 10001, 10002, 10003


def should_retry_sync(code: int) -> bool:
    """After a broker answer with ``code``: retry another queue (True) or stop (False)."""
    return code in RETRY_RESPONSE_CODES


@dataclass
class SendJob:
    """One ``send()`` call. Its budget is ``timeout_ms`` (``sendMsgTimeout``, cluster ms) but at
    least ``min_timeout_wall_ms`` wall ms, both counted from ``begun``: the job is out of time only
    past both, which is ``max(sendMsgTimeout x scale, minSendTimeoutWallMs)`` wall ms."""

    msgs: list[OutgoingMessage]
    mode: str
    begun: Now
    timeout_ms: float
    min_timeout_wall_ms: float
    times_total: int
    times: int = 0
    last_mq: MessageQueue | None = None
    brokers_sent: list[str | None] = field(default_factory=list)
    result: tuple[MessageQueue, Frame] | None = None  # the last SendResult (possibly not SEND_OK): queue, answer
    error: tuple[int | None, str] | None = None
    on_done: Callable[[bool], list[Action]] | None = None  # its actions follow the send's last event
    sharding_key: str | None = None  # an ordered send (send_select.SelectSendFlow)
    route_queues: int | None = None  # the size of the publish list an ordered send chose from

    @property
    def topic(self) -> str:
        return self.msgs[0].topic

    def cost_ms(self, now: Now) -> float:
        """Cluster ms since the call began (RocketMQ's ``costTime``)."""
        return now.mono_ms - self.begun.mono_ms

    def cost_wall_ms(self, now: Now) -> float:
        return now.host_mono_ms - self.begun.host_mono_ms

    def out_of_time(self, now: Now) -> bool:
        """``timeout < costTime``, with the wall-clock floor: past the budget on both clocks."""
        return self.cost_ms(now) > self.timeout_ms and self.cost_wall_ms(now) > self.min_timeout_wall_ms

    def request(self, addr: str, frame: Frame, now: Now, on_reply: ReplyHandler) -> Request:
        """An attempt's request, waiting what is left of the budget (``timeout - costTime``,
        and what is left of the wall floor)."""
        return Request(addr, frame, max(self.timeout_ms - self.cost_ms(now), 0.0), on_reply,
                       min_timeout_wall_ms=self.min_timeout_wall_ms - self.cost_wall_ms(now))


class SendFlow:
    """Owns the attempts of every in-flight job of one producer."""

    def __init__(self, producer: "Producer") -> None:
        self.producer = producer

    # ------------------------------------------------------------------ entry

    def send(self, job: SendJob, now: Now) -> list[Action]:
        try:
            self._validate(job)
        except MQClientError as exc:
            return self._fail(job, exc.code, exc.message, attempts=0)
        return self._find_publish_info(job.topic, now, lambda info, n: self._with_route(job, info, n))

    def _validate(self, job: SendJob) -> None:
        if len(job.msgs) > 1 and len({m.topic for m in job.msgs}) > 1:
            raise MQClientError(-1, "The topic of the messages in one batch should be the same.")
        check_message(job.topic, self.body_of(job), self.producer.cfg.maxMessageSize)

    @staticmethod
    def body_of(job: SendJob) -> bytes:
        """One message's body as it is; a batch as the JSON list that send_processor.batch_messages
        reads, each body as the store keeps it (``body``, or ``body64`` when it is no UTF-8)."""
        if len(job.msgs) == 1:
            return job.msgs[0].body
        return json.dumps([{**body_fields(m.body), "properties": m.properties}
                           for m in job.msgs], separators=(",", ":")).encode()

    def _find_publish_info(self, topic: str, now: Now,
                           cont: Callable[[TopicPublishInfo | None, Now], list[Action]]) -> list[Action]:
        """``tryToFindTopicPublishInfo`` (docs/rocketmq-model.md §3.2 step 2)."""
        table = self.producer.publish_table

        def second(n: Now) -> list[Action]:
            info = table.get(topic)
            if info is not None and (info.have_topic_router_info or info.ok()):
                return cont(info, n)
            return self.producer.instance.update_route(
                topic, n, lambda ok, m: cont(table.get(topic), m),
                default_key=self.producer.cfg.createTopicKey,
                default_queue_nums=self.producer.cfg.defaultTopicQueueNums)

        info = table.get(topic)
        if info is None or not info.ok():
            table.setdefault(topic, TopicPublishInfo.empty(self.producer.rng))
            return self.producer.instance.update_route(topic, now, lambda ok, n: second(n))
        return second(now)

    def _with_route(self, job: SendJob, info: TopicPublishInfo | None, now: Now) -> list[Action]:
        if info is not None and info.ok():
            return self._attempt(job, info, now)
        exc = no_name_server_error() if not self.producer.instance.has_namesrv() else no_route_error(job.topic)
        outcome = "no_route" if exc.code == 10005 else "error"
        ev = self._event(job, None, 1, outcome, exc.code, None, exc.message)
        return [ev] + self._fail(job, exc.code, exc.message, attempts=0)

    # ------------------------------------------------------------------ attempts

    def _attempt(self, job: SendJob, info: TopicPublishInfo, now: Now) -> list[Action]:
        if job.times >= job.times_total:
            return self._after_loop(job, now)
        last = job.last_mq.broker_name if job.last_mq else None
        mq = self.producer.fault.select_one_message_queue(info, last, now.wall_ms)
        job.last_mq = mq
        job.brokers_sent.append(mq.broker_name)
        if job.out_of_time(now):  # callTimeout breaks the loop; a stored result is still returned
            if job.result is not None:
                return self._done(job, True)
            return self._fail(job, None, "sendDefaultImpl call timeout", attempts=job.times)
        attempt = job.times + 1
        addr = self.producer.instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:  # MQClientException: retried, broker isolated
            self.producer.fault.update_fault_item(mq.broker_name, 0, True, now.wall_ms)
            job.error = (BROKER_NOT_EXIST_EXCEPTION, f"The broker[{mq.broker_name}] not exist")
            ev = self._event(job, mq, attempt, "error", BROKER_NOT_EXIST_EXCEPTION, None, job.error[1])
            job.times += 1
            return [ev] + self._attempt(job, info, now)
        frame = self._frame(job, mq, now)
        if job.mode == "oneway":
            self.producer.fault.update_fault_item(mq.broker_name, 0, False, now.wall_ms)
            ev = self._event(job, mq, attempt, "oneway", None, None, addr=addr)
            return [Oneway(addr, frame), ev] + self._done(job, True)
        sent = now
        return [job.request(addr, frame, now,
                            lambda resp, n: self._on_reply(job, info, mq, addr, frame, attempt, sent, resp, n))]

    def _on_reply(self, job: SendJob, info: TopicPublishInfo, mq: MessageQueue, addr: str, frame: Frame,
                  attempt: int, sent: Now, resp: Frame | None, now: Now) -> list[Action]:
        latency = now.mono_ms - sent.mono_ms  # cluster ms: what MQFaultStrategy compares
        wall_latency = now.host_mono_ms - sent.host_mono_ms  # what the send event reports
        fault = self.producer.fault
        if resp is None:
            code, text, outcome = self._no_answer(job, addr)
            job.error = (code, text)
            ev = self._event(job, mq, attempt, outcome, code, wall_latency, text, addr)
            if job.mode == "async":
                fault.update_fault_item(mq.broker_name, 3000, True, now.wall_ms)
                return [ev] + self._async_retry(job, info, mq, frame, attempt, now)
            fault.update_fault_item(mq.broker_name, latency, True, now.wall_ms)
            job.times += 1
            return [ev] + self._attempt(job, info, now)
        code = resp.code
        if code in STORED_CODES:
            fault.update_fault_item(mq.broker_name, latency, False, now.wall_ms)
            ev = self._event(job, mq, attempt, "ok", code, wall_latency, addr=addr)
            job.result = (mq, resp)
            if job.mode == "sync" and code != 0 and self.producer.cfg.retryAnotherBrokerWhenNotStoreOK:
                job.times += 1
                return [ev] + self._attempt(job, info, now)
            return [ev] + self._done(job, True)
        text = resp.remark or ""
        job.error = (code, text)
        fault.update_fault_item(mq.broker_name, latency, True, now.wall_ms)
        ev = self._event(job, mq, attempt, "error", code, wall_latency, text, addr)
        if job.mode == "sync" and should_retry_sync(code):
            job.times += 1
            return [ev] + self._attempt(job, info, now)
        if job.result is not None:
            return [ev] + self._done(job, True)
        return [ev] + self._fail(job, code, text, attempts=attempt)

    def _no_answer(self, job: SendJob, addr: str) -> tuple[int, str, str]:
        """(code, RocketMQ's text, outcome) of an attempt without an answer: a refused connection
        (the channel is known down) or a timeout."""
        if addr in self.producer.instance.down_addrs:
            return CONNECT_BROKER_EXCEPTION, f"connect to {addr} failed", "error"
        return ACCESS_BROKER_TIMEOUT, f"wait response on the channel <{addr}> timeout, {int(job.timeout_ms)}(ms)", \
            "timeout"

    def _async_retry(self, job: SendJob, info: TopicPublishInfo, failed: MessageQueue, frame: Frame,
                     attempt: int, now: Now) -> list[Action]:
        if attempt > self.producer.cfg.retryTimesWhenSendAsyncFailed:
            code, text = job.error or (None, "")
            return self._fail(job, code, text, attempts=attempt)
        broker = self.producer.fault.select_one_message_queue(info, failed.broker_name, now.wall_ms).broker_name
        mq = MessageQueue(failed.topic, broker, failed.queue_id)  # same request, same queueId
        addr = self.producer.instance.find_broker_address_in_publish(broker)
        if addr is None:
            job.error = (BROKER_NOT_EXIST_EXCEPTION, f"The broker[{broker}] not exist")
            ev = self._event(job, mq, attempt + 1, "error", BROKER_NOT_EXIST_EXCEPTION, None, job.error[1])
            return [ev] + self._async_retry(job, info, mq, frame, attempt + 1, now)
        sent = now
        return [job.request(addr, frame, now,
                            lambda resp, n: self._on_reply(job, info, mq, addr, frame, attempt + 1, sent, resp, n))]

    def _after_loop(self, job: SendJob, now: Now) -> list[Action]:
        if job.result is not None:
            return self._done(job, True)
        code = job.error[0] if job.error else None
        brokers = ", ".join(b or "null" for b in job.brokers_sent)
        text = (f"Send [{job.times}] times, still failed, cost [{int(job.cost_ms(now))}]ms, "
                f"Topic: {job.topic}, BrokersSent: [{brokers}]{FAQ_SUFFIX}")
        return self._fail(job, code, text, attempts=job.times)

    # ------------------------------------------------------------------ frames and events

    def _frame(self, job: SendJob, mq: MessageQueue, now: Now) -> Frame:
        cfg = self.producer.cfg
        batch = len(job.msgs) > 1
        fields = {
            "producerGroup": self.producer.group, "topic": mq.topic, "defaultTopic": cfg.createTopicKey,
            "defaultTopicQueueNums": cfg.defaultTopicQueueNums, "queueId": mq.queue_id,
            "sysFlag": PREPARED_TYPE if not batch and is_half(job.msgs[0]) else 0,
            "bornTimestamp": int(now.wall_ms), "flag": 0,
            "properties": {} if batch else dict(job.msgs[0].properties),
            "reconsumeTimes": 0, "unitMode": cfg.unitMode, "batch": batch,
        }  # maxReconsumeTimes is only set on messages re-sent to a %RETRY% topic
        code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        make = oneway if job.mode == "oneway" else request
        return make(code, fields, self.body_of(job))

    def _event(self, job: SendJob, mq: MessageQueue | None, attempt: int, outcome: str, code: int | None,
               latency: float | None, error: str | None = None, addr: str | None = None) -> Emit:
        """One ``send`` event per attempt; ``latency`` (wall ms) None for an attempt that never got an
        answer on the wire (no route, no broker address, oneway), so it cannot pull the
        latency percentiles towards 0."""
        fields = {"msg_id": job.msgs[0].msg_id, "topic": job.topic, "group": self.producer.group,
                  "broker": mq.broker_name if mq else None, "broker_id": 0 if mq else None, "broker_addr": addr,
                  "queue_id": mq.queue_id if mq else None, "attempt": attempt, "outcome": outcome,
                  "code": code, "latency_ms": None if latency is None else round(latency, 3), "mode": job.mode}
        if error is not None:
            fields["error"] = error
        return Emit("send", self._extra(job, fields))

    @staticmethod
    def _extra(job: SendJob, fields: dict) -> dict:
        """A batch's ids; an ordered send's key and publish-list size; a delay level (docs/events.md)."""
        if len(job.msgs) > 1:
            fields["msg_ids"] = [m.msg_id for m in job.msgs]
        if job.sharding_key is not None:
            fields["sharding_key"] = job.sharding_key
            if job.route_queues is not None:
                fields["route_queues"] = job.route_queues
        if "DELAY" in job.msgs[0].properties:
            fields["delay_level"] = int(job.msgs[0].properties["DELAY"])
        if is_half(job.msgs[0]):
            fields["transaction"] = "half"
        return fields

    def _fail(self, job: SendJob, code: int | None, text: str, attempts: int) -> list[Action]:
        fields = {"msg_id": job.msgs[0].msg_id, "topic": job.topic, "group": self.producer.group,
                  "mode": job.mode, "attempts": attempts, "code": code, "error": text}
        return [Emit("send.fail", self._extra(job, fields))] + self._done(job, False)

    def _done(self, job: SendJob, ok: bool) -> list[Action]:
        return job.on_done(ok) if job.on_done is not None else []


__all__ = ["RETRY_RESPONSE_CODES", "SendFlow", "SendJob", "should_retry_sync", "ResponseCode"]
