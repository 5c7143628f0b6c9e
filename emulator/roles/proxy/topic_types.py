"""Each topic's message type, as the proxy learns it from a broker (docs/rocketmq-model.md §10.5).

5.x's proxy reads a topic's config from a broker (GET_TOPIC_CONFIG, 351) and caches it like a
route (reloaded when read 20 s after it was fetched). The type is the config's ``message.type``
attribute: none means NORMAL, a config it cannot read means UNSPECIFIED, which a 5.x client
refuses to send to. The route's accepted types and the send check both come from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import RequestCode, ResponseCode, request
from rmqemu.emulator.roles.common.base import Action, Now, Request
from rmqemu.emulator.roles.common.message_type import NORMAL, UNSPECIFIED, check_message_type
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy.route_view import QueueView

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

TIMEOUT_MS = 3000
NAMES = {pb.NORMAL: "NORMAL", pb.FIFO: "FIFO", pb.DELAY: "DELAY", pb.TRANSACTION: "TRANSACTION"}
Then = Callable[[QueueView | None, str, Now], list[Action]]


@dataclass
class _Known:
    type_name: str
    fetched_ms: float
    loading: bool = False


def type_of(config: Any) -> str:
    """The ``message.type`` attribute of a TopicConfig as GET_TOPIC_CONFIG answers it; NORMAL
    when there is none, UNSPECIFIED for a body that is no TopicConfig."""
    attrs = config.get("attributes") if isinstance(config, dict) else None
    if not isinstance(attrs, dict):
        return UNSPECIFIED
    value = attrs.get("message.type")
    return str(value) if value else NORMAL


class TopicTypes:
    def __init__(self, proxy: "Proxy", refresh_ms: float = 20_000) -> None:
        self.proxy = proxy
        self.refresh_ms = refresh_ms
        self.known: dict[str, _Known] = {}
        self.waiters: dict[str, list[tuple[QueueView | None, Then]]] = {}

    def check(self, topic: str, message_type: int) -> str | None:
        if not self.proxy.cfg.enableTopicMessageTypeCheck:
            return None
        known = self.known.get(topic)
        return check_message_type(known.type_name if known else UNSPECIFIED, NAMES.get(message_type, UNSPECIFIED))

    def with_view(self, topic: str, now: Now, then: Then) -> list[Action]:
        """``then(view, type, now)``: the topic's route view and its type, each from its cache."""
        def on_view(view: QueueView | None, vnow: Now) -> list[Action]:
            known = self.known.get(topic)
            if view is None or view.empty:
                return then(view, known.type_name if known else UNSPECIFIED, vnow)
            if known is None:
                self.waiters.setdefault(topic, []).append((view, then))
                return self._load(topic, view, vnow) if len(self.waiters[topic]) == 1 else []
            actions: list[Action] = []
            if vnow.mono_ms - known.fetched_ms >= self.refresh_ms and not known.loading:
                known.loading = True
                actions += self._load(topic, view, vnow)
            return actions + then(view, known.type_name, vnow)

        return self.proxy.routes.get(topic, now, on_view)

    def _load(self, topic: str, view: QueueView, now: Now) -> list[Action]:
        addr = next((view.masters[b] for b in sorted(view.masters)), None)
        if addr is None:
            return self._loaded(topic, UNSPECIFIED, now)

        def on_reply(resp, rnow: Now) -> list[Action]:  # type: ignore[no-untyped-def]
            if resp is None or resp.code != ResponseCode.SUCCESS:
                known = self.known.get(topic)
                return self._loaded(topic, known.type_name if known else UNSPECIFIED, rnow)
            try:
                return self._loaded(topic, type_of(resp.json_body()), rnow)
            except ValueError:
                return self._loaded(topic, UNSPECIFIED, rnow)

        return [Request(addr, request(RequestCode.GET_TOPIC_CONFIG, {"topic": topic}), TIMEOUT_MS, on_reply)]

    def _loaded(self, topic: str, type_name: str, now: Now) -> list[Action]:
        self.known.pop(topic, None)
        self.known[topic] = _Known(type_name, now.mono_ms)
        if len(self.known) > self.proxy.cfg.topicRouteServiceCacheMaxNum:  # insertion order: the oldest goes
            del self.known[next(iter(self.known))]
        actions: list[Action] = []
        for view, then in self.waiters.pop(topic, []):
            actions += then(view, type_name, now)
        return actions
