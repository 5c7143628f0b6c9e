"""Seeded message generation for producers and the consume-failure knob for consumers.

Rate model: **even spacing**, not Poisson. ``rate`` is messages per *cluster* second, so message
``k`` (0-based) is due at ``start + (k + 1) * 1000 / rate`` cluster ms. A timer ticks every period
from the start, but never more often than every ``MIN_TICK_MS`` wall ms (``Every.min_period_wall_ms``:
the node runtime applies it, as it applies ``timing.scale``), and issues every message due by then,
so rates above the tick rate come out in small bursts with the right average. The pacing starts
with the timer's own schedule, so a tick that fires late issues what is due and the next one,
on time, finds its message due (a pacing clock ahead of the timer's would find none on some ticks).
Even spacing keeps runs with the same seed comparable; randomness (message keys,
the consumer's failures) comes from a ``random.Random`` seeded with the run seed and node name.

Topics are used round-robin in the order given; each message carries a unique ``UNIQ_KEY``
(``<node>-<incarnation hex>-<counter>``: readable, unique per message even across a restart of
the node, since the incarnation is the start wall time). ``delay_level`` puts a ``DELAY`` on each
message (docs/rocketmq-model.md §2.9): one level for all, or a list used round-robin like the
topics (``[0, 0, 3]``: every third message waits 10 s); 0 is none.

Ordered sends (``ordered:``, docs/rocketmq-model.md §3.7): each instance owns ``keys`` sharding
keys ``<node>:<i>``, so every key has one producer; key ``i`` always uses topic ``i mod
len(topics)``; each message's key is drawn by a :class:`KeyPicker` (seeded ``random``, or
``cycle``) with its own ``random.Random``, so the key sequence of a seed does not depend on
anything else the producer draws. The key is also the message's ``KEYS`` property.

Bodies (``body:``, :mod:`.bodies`, docs/design.md §5 "Message bodies") are ``size`` bytes of
filler, hostile text or bytes, drawn from a ``random.Random`` of their own for the same reason.

``transaction:`` (:mod:`.transaction_workload`, docs/rocketmq-model.md §9.1) makes the producer send
each message as a half with ``sendMessageInTransaction``; its outcomes have streams of their own too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from rmqemu.emulator.roles.client.bodies import body_kind_problem, make_body
from rmqemu.emulator.roles.client.transaction_workload import TransactionWorkload, transaction_problem
from rmqemu.emulator.roles.common import sysflag

MIN_TICK_MS = 2.0  # wall ms: a Python process cannot usefully wake more often than this
MODES = ("sync", "async", "oneway")
PICKS = ("random", "cycle")


@dataclass
class OutgoingMessage:
    """A ``Message``: topic, body, properties (``UNIQ_KEY``, ``KEYS``)."""

    topic: str
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def msg_id(self) -> str:
        return self.properties["UNIQ_KEY"]


def is_half(msg: OutgoingMessage) -> bool:
    """A half: what sendKernelImpl sets ``PREPARED_TYPE`` by (:func:`sysflag.is_half`)."""
    return sysflag.is_half(msg.properties)


@dataclass
class ProducerWorkload:
    topics: list[str]
    rate: float = 1.0
    size: int = 128
    mode: str = "sync"
    batch: int = 1
    keys: bool = False
    count: int | None = None  # stop after this many messages (None: until the node stops)
    ordered: "OrderedWorkload | None" = None
    delay_level: int | list[int] = 0
    body: str = "filler"
    transaction: TransactionWorkload | None = None  # sendMessageInTransaction (docs/rocketmq-model.md §9.1)

    @property
    def delay_levels(self) -> list[int]:
        return list(self.delay_level) if isinstance(self.delay_level, list) else [self.delay_level]

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "ProducerWorkload":
        d = dict(d or {})
        unknown = set(d) - {"topics", "rate", "size", "mode", "batch", "keys", "count", "ordered", "delay_level",
                               "body", "transaction"}
        if unknown:
            raise ValueError(f"workload: unknown key {sorted(unknown)[0]}")
        ordered = d.pop("ordered", None)
        transaction = d.pop("transaction", None)
        w = cls(topics=list(d.pop("topics", [])), **d)
        if transaction is not None:
            w.transaction = TransactionWorkload.from_dict(transaction)
            problem = transaction_problem(w.mode, w.batch, ordered is not None)
            if problem:
                raise ValueError(f"workload.transaction: {problem}")
        if ordered is not None:
            w.ordered = OrderedWorkload.from_dict(ordered)
            if w.mode != "sync" or w.batch != 1:
                raise ValueError("workload.ordered: needs mode sync and batch 1 (an ordered send is "
                                 f"send(msg, selector, key), one sync message), got mode {w.mode}, batch {w.batch}")
        if not w.topics or not all(isinstance(t, str) for t in w.topics):
            raise ValueError("workload.topics: must be a non-empty list of topic names")
        if not isinstance(w.rate, (int, float)) or isinstance(w.rate, bool) or w.rate < 0:
            raise ValueError("workload.rate: must be a number >= 0")
        if w.mode not in MODES:
            raise ValueError(f"workload.mode: must be one of {', '.join(MODES)}, got {w.mode!r}")
        if not isinstance(w.batch, int) or w.batch < 1:
            raise ValueError("workload.batch: must be an int >= 1")
        if not isinstance(w.size, int) or w.size < 0:
            raise ValueError("workload.size: must be an int >= 0")
        problem = delay_level_problem(w.delay_level, w.batch)
        if problem:
            raise ValueError(f"workload.delay_level: {problem}")
        problem = body_kind_problem(w.body)
        if problem:
            raise ValueError(f"workload.body: {problem}")
        return w

    def period_ms(self) -> float | None:
        """Cluster ms between two messages, None for rate 0."""
        return 1000.0 / self.rate if self.rate > 0 else None


@dataclass
class OrderedWorkload:
    """``ordered:`` of a producer: ``keys`` sharding keys per instance, drawn by ``pick``."""

    keys: int = 16
    pick: str = "random"

    @classmethod
    def from_dict(cls, d: Any) -> "OrderedWorkload":
        if d is True:
            return cls()
        if not isinstance(d, dict):
            raise ValueError(f"workload.ordered: must be true or a mapping {{keys, pick}}, got {d!r}")
        unknown = set(d) - {"keys", "pick"}
        if unknown:
            raise ValueError(f"workload.ordered: unknown key {sorted(unknown)[0]} (known: keys, pick)")
        w = cls(**d)
        if not isinstance(w.keys, int) or isinstance(w.keys, bool) or not 1 <= w.keys <= 100000:
            raise ValueError(f"workload.ordered.keys: must be an int in [1, 100000], got {w.keys!r}")
        if w.pick not in PICKS:
            raise ValueError(f"workload.ordered.pick: must be one of {', '.join(PICKS)}, got {w.pick!r}")
        return w


class KeyPicker:
    """The sharding key of each ordered message: ``<node>:<i>`` for ``i`` drawn from ``keys``."""

    def __init__(self, node: str, ordered: OrderedWorkload, rng: random.Random) -> None:
        self.keys = [f"{node}:{i}" for i in range(ordered.keys)]
        self.pick = ordered.pick
        self.rng = rng
        self.next_index = 0

    def next_key(self) -> tuple[int, str]:
        """(index, key) of the next message."""
        if self.pick == "cycle":
            i, self.next_index = self.next_index, (self.next_index + 1) % len(self.keys)
        else:
            i = self.rng.randrange(len(self.keys))
        return i, self.keys[i]
def delay_level_problem(value: Any, batch: int) -> str | None:
    """Why ``value`` is no ``delay_level`` for a producer sending batches of ``batch``, or None."""
    levels = value if isinstance(value, list) else [value]
    if not levels or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 for v in levels):
        return f"expected a level (an int from 0, none, to 2147483647) or a non-empty list of them, got {value!r:.80}"
    if batch > 1 and max(levels) > 0:
        return "a batch cannot carry a delay level (RocketMQ's client refuses it, the broker answers MESSAGE_ILLEGAL)"
    return None


class Pacer:
    """How many messages are due at ``mono_ms`` given even spacing from ``start_ms``."""

    def __init__(self, start_ms: float, period_ms: float, limit: int | None) -> None:
        self.start_ms = start_ms
        self.period_ms = period_ms
        self.limit = limit
        self.issued = 0  # sent or skipped

    def due(self, mono_ms: float) -> int:
        if mono_ms < self.start_ms:
            return 0
        total = int((mono_ms - self.start_ms) // self.period_ms) + 1
        if self.limit is not None:
            total = min(total, self.limit)
        return max(total - self.issued, 0)


class MessageFactory:
    """The producer's messages in turn; ``rng`` draws message keys, ``bodies`` the bodies."""

    def __init__(self, node: str, workload: ProducerWorkload, rng: random.Random,
                 bodies: random.Random | None = None) -> None:
        self.node = node
        self.workload = workload
        self.rng = rng
        self.bodies = bodies or random.Random(node)
        self.counter = 0
        self.incarnation = "0"

    def set_incarnation(self, wall_ms: float) -> None:
        self.incarnation = format(int(wall_ms) & 0xFFFFFFFFFF, "x")

    def next_message(self, key: tuple[int, str] | None = None) -> OutgoingMessage:
        """The next message; with ``key`` (index, sharding key from :class:`KeyPicker`), the key's
        topic and the key as ``KEYS``."""
        topics = self.workload.topics
        topic = topics[(key[0] if key else self.counter) % len(topics)]
        self.counter += 1
        msg_id = f"{self.node}-{self.incarnation}-{self.counter}"
        props = {"UNIQ_KEY": msg_id}
        levels = self.workload.delay_levels
        level = levels[(self.counter - 1) % len(levels)]
        if level > 0:
            props["DELAY"] = str(level)
        if key is not None:
            props["KEYS"] = key[1]
        elif self.workload.keys:
            props["KEYS"] = f"key-{self.rng.randrange(10**8):08d}"
        body = make_body(self.workload.body, self.workload.size, msg_id, self.bodies)
        return OutgoingMessage(topic, body, props)


@dataclass
class ConsumerWorkload:
    subscribe: list[dict[str, str]]
    allocate: str = "AVG"
    allocate_params: dict[str, Any] = field(default_factory=dict)
    messageModel: str | None = None  # overrides config.messageModel when set
    fail_rate: float = 0.0  # probability that the listener fails (RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT)
    orderly: bool = False  # MessageListenerOrderly (docs/rocketmq-model.md §4.9) instead of concurrently

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "ConsumerWorkload":
        d = dict(d or {})
        unknown = set(d) - {"subscribe", "allocate", "allocate_params", "messageModel", "fail_rate",
                             "orderly"}
        if unknown:
            raise ValueError(f"workload: unknown key {sorted(unknown)[0]}")
        subs = []
        for s in d.pop("subscribe", []):
            if isinstance(s, str):
                s = {"topic": s, "expression": "*"}
            subs.append({"topic": s["topic"], "expression": s.get("expression") or "*"})
        if not subs:
            raise ValueError("workload.subscribe: must list at least one topic")
        w = cls(subscribe=subs, **d)
        if not 0.0 <= float(w.fail_rate) <= 1.0:
            raise ValueError("workload.fail_rate: must be within [0, 1]")
        if not isinstance(w.orderly, bool):
            raise ValueError(f"workload.orderly: must be true or false, got {w.orderly!r}")
        if w.orderly and w.messageModel == "BROADCASTING":
            raise ValueError("workload.orderly: needs messageModel CLUSTERING (the orderly consumer is modelled "
                             "with its broker locks, which BROADCASTING does not take)")
        return w
