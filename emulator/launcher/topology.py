"""Topology files (docs/design.md §5): the schema, as pydantic models.

The models are the single source of truth for what a topology may say; ``rmqemu schema`` exports
them as JSON Schema for editors. Loading, error formatting and node naming live in ``topology_load``.
Broker and client entries accept any RocketMQ key by its own name (``pollNameServerInterval``,
...); those are checked against the config dataclasses of the roles, so a typo is an error.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rmqemu.emulator.launcher import limits
from rmqemu.emulator.launcher import topology_client5 as v5
from rmqemu.emulator.launcher import topology_order as order
from rmqemu.emulator.launcher import topology_tx as tx
from rmqemu.emulator.launcher.fault_spec import FaultSpec, parse_duration
from rmqemu.emulator.launcher.nodes import peer_ids, peer_node
from rmqemu.emulator.launcher.topology_dledger import DLEDGER_OWNED, DLedgerKey, slaves_problem
from rmqemu.emulator.launcher.topology_proxy import ProxiesKey
from rmqemu.emulator.launcher.topology_remoting import RemotingKey, topology_problems
from rmqemu.emulator.roles.client.bodies import BodyKind
from rmqemu.emulator.roles.client.client_config import ConsumerConfig, ProducerConfig, config_from_dict
from rmqemu.emulator.roles.client.workload import delay_level_problem
from rmqemu.emulator.roles.common.broker_config import ConfigError, broker_configs_from_dict, namesrv_configs_from_dict
from rmqemu.emulator.roles.common.node_spec import DEFAULT_MIN_REQUEST_TIMEOUT_WALL_MS
from rmqemu.verdicts import EXPECT_RULE_SCHEMA, expect_problems


def _valid_group(v: str) -> str:
    if not limits.NAME_RE.fullmatch(v) or len(v) > 255:
        raise ValueError(f"{v!r} is not a valid group: 1-255 chars of ^[%|a-zA-Z0-9_-]+$")
    return v


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Timing(Strict):
    scale: float = Field(0.01, ge=limits.MIN_SCALE, le=10, description="every RocketMQ interval is multiplied by this")
    minRequestTimeoutWallMs: float = Field(
        DEFAULT_MIN_REQUEST_TIMEOUT_WALL_MS, ge=0, le=60000,
        description="wall-clock floor (ms) of every request timeout of brokers and clients (route queries, "
                    "heartbeats, consumer lists, offsets, pulls, registration, HA, slave sync, admin): a "
                    "request waits max(timeout x scale, this, the producer's minSendTimeoutWallMs for a "
                    "send); 0 is exact scaling")
    drainTimeout: float = Field(
        limits.DEFAULT_DRAIN_TIMEOUT_S, ge=0, le=3600,
        description="cluster seconds the end of a run waits, after the producers stopped, for every consumer "
                    "group to consume up to each master's max offset (docs/design.md §6, `run.drain`); "
                    "'30s' or a number; 0 checks once without waiting")

    @field_validator("drainTimeout", mode="before")
    @classmethod
    def _drain_timeout(cls, v: Any) -> float:
        return parse_duration(v)


def extra_key_problems(extra: dict[str, Any], check: Callable[[dict[str, Any]], object]) -> list[str]:
    """``"key: message"`` for every RocketMQ key the role's own config parser rejects (one key at
    a time, so a file with three bad keys gets three messages)."""
    problems = []
    for key, value in extra.items():
        try:
            check({key: value})
        except ValueError as exc:
            problems.append(str(exc) if str(exc).startswith(f"{key}: ") else f"{key}: {exc}")
    return problems


def _check_extra_keys(model: BaseModel, check: Callable[[dict[str, Any]], object], *more: str | None) -> None:
    """Check a model's extra (RocketMQ) keys; raises one ValueError listing every bad key and
    every problem of ``more``."""
    problems = extra_key_problems(dict(model.model_extra or {}), check) + [p for p in more if p]
    if problems:
        raise ValueError("; ".join(problems))


class BrokerEntry(BaseModel):
    """One broker name: a master and ``slaves`` slaves, or the peers of a ``dledger:`` group;
    extra keys are BrokerConfig keys."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(description="brokerName; nodes are <name>-0 (master), <name>-1.. (slaves), or "
                                  "<name>-n0, <name>-n1.. (the peers of a dledger: group)")
    cluster: str = Field("DefaultCluster", description="brokerClusterName")
    slaves: int = Field(0, ge=0, le=8)
    dledger: DLedgerKey = None

    @field_validator("name", "cluster")
    @classmethod
    def _name_chars(cls, v: str) -> str:
        if not limits.NAME_RE.fullmatch(v):
            raise ValueError(f"{v!r} may only contain letters, digits, %, |, _ and -")
        return v

    @model_validator(mode="after")
    def _rocketmq_keys(self) -> "BrokerEntry":
        _check_extra_keys(self, _broker_entry_keys, slaves_problem(self.slaves, self.dledger))
        return self

    @property
    def node_names(self) -> list[str]:
        """The entry's nodes: ``<name>-0``, ``<name>-1``.. or a DLedger group's ``<name>-n0``.."""
        if self.dledger is not None:
            return [peer_node(self.name, p) for p in peer_ids(self.dledger.peers)]
        return [f"{self.name}-{i}" for i in range(self.slaves + 1)]


class TopicEntry(Strict):
    """A topic created by admin (UPDATE_AND_CREATE_TOPIC) on the named brokers at start."""

    name: str
    brokers: list[str] = Field(min_length=1, max_length=limits.MAX_ENTRIES)
    queues: int = Field(4, ge=1, le=1024, description="read and write queue count")
    read_queues: int | None = Field(None, ge=0, le=1024)
    write_queues: int | None = Field(None, ge=0, le=1024)
    perm: int = Field(6, ge=0, le=7)
    message_type: Literal["NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"] | None = Field(
        None, description="RocketMQ 5's message.type attribute (none: NORMAL); MIXED needs the brokers' "
        "enableMixedMessageType (docs/rocketmq-model.md §10.5)")

    @field_validator("name")
    @classmethod
    def _topic_chars(cls, v: str) -> str:
        if not limits.NAME_RE.fullmatch(v) or len(v) > 127:
            raise ValueError(f"{v!r} is not a valid topic: 1-127 chars of ^[%|a-zA-Z0-9_-]+$")
        return v


class ProducerEntry(BaseModel):
    """A producer group's workload; extra keys are DefaultMQProducer/ClientConfig keys."""

    model_config = ConfigDict(extra="allow")

    group: str
    instances: int = Field(1, ge=1, le=64)
    topics: list[str] = Field(min_length=1, max_length=limits.MAX_ENTRIES)
    rate: float = Field(1.0, ge=0, description="messages per cluster second, per instance")
    size: int = Field(128, ge=1, le=4 * 1024 * 1024)
    mode: Literal["sync", "async", "oneway"] = "sync"
    batch: int = Field(1, ge=1, le=256)
    keys: bool = True
    ordered: order.OrderedKey = Field(None, description=order.ORDERED_DESCRIPTION)
    delay_level: int | list[int] = Field(0, description=(
        "DELAY of each message (docs/rocketmq-model.md §2.9): 0 none, 1 (1 s) .. 18 (2 h) with the default "
        "messageDelayLevel, higher is capped by the broker; a list is used round-robin ([0, 3]: every other "
        "message waits 10 s). Not with batch > 1"))
    body: BodyKind = Field("filler", description=(
        "what each body of `size` bytes is (docs/design.md §5 'Message bodies'): filler (<msg id>|xxx..), text "
        "(Unicode rich in line breaks, NUL, quotes, astral characters), bytes (never valid UTF-8), mixed (each "
        "message one of the three)"))
    transaction: tx.TransactionKey = Field(None, description=tx.TRANSACTION_DESCRIPTION)
    client: v5.ClientKind = v5.CLIENT_FIELD
    endpoints: list[str] | None = v5.ENDPOINTS_FIELD
    message_type: Literal["NORMAL", "FIFO", "DELAY"] | None = v5.MESSAGE_TYPE_FIELD
    message_groups: int = Field(8, ge=1, le=100000, description="v5 FIFO producers: message groups per instance")
    delay: float = Field(10.0, ge=0, le=86400, description="v5 DELAY producers: cluster seconds ahead")

    @field_validator("delay", mode="before")
    @classmethod
    def _delay(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("group")
    @classmethod
    def _group_chars(cls, v: str) -> str:
        return _valid_group(v)

    @field_validator("delay_level", mode="before")
    @classmethod
    def _delay_level(cls, v: Any, info: ValidationInfo) -> Any:
        problem = delay_level_problem(v, info.data.get("batch", 1))
        if problem:
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _rocketmq_keys(self) -> "ProducerEntry":
        if self.client == "v5":
            _check_extra_keys(self, v5.check_config, *v5.producer_problems(self))
            return self
        _check_extra_keys(self, lambda d: config_from_dict(ProducerConfig, d), *v5.producer_problems(self),
                          order.ordered_problem(self.ordered, self.mode, self.batch),
                          tx.entry_problem(self.transaction, self.mode, self.batch, self.ordered is not None))
        return self


class ConsumerEntry(BaseModel):
    """A consumer group's instances; two entries may share a group (seed 002's mistake)."""

    model_config = ConfigDict(extra="allow")

    group: str
    instances: int = Field(1, ge=1, le=64)
    subscribe: list[str] = Field(min_length=1, max_length=limits.MAX_ENTRIES,
                                 description="topics; 'T' or 'T:tagA||tagB'")
    allocate: Literal["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM"] = "AVG"
    allocate_params: dict[str, Any] = Field(default_factory=dict)
    messageModel: Literal["CLUSTERING", "BROADCASTING"] = "CLUSTERING"
    fail_rate: float = Field(0.0, ge=0, le=1, description="share of messages whose consumption fails")
    orderly: bool = Field(False, description=order.ORDERLY_DESCRIPTION)
    client: v5.ClientKind = v5.CLIENT_FIELD
    endpoints: list[str] | None = v5.ENDPOINTS_FIELD

    @field_validator("group")
    @classmethod
    def _group_chars(cls, v: str) -> str:
        return _valid_group(v)

    @model_validator(mode="after")
    def _rocketmq_keys(self) -> "ConsumerEntry":
        if self.client == "v5":
            _check_extra_keys(self, v5.check_config, *v5.consumer_problems(self))
            return self
        _check_extra_keys(self, lambda d: config_from_dict(ConsumerConfig, d), *v5.consumer_problems(self),
                          order.orderly_problem(self.orderly, self.messageModel))
        return self


class NamesrvEntry(BaseModel):
    """Namesrv options when given as a mapping: ``namesrvs: {count: 2, ...NamesrvConfig keys}``."""

    model_config = ConfigDict(extra="allow")

    count: int = Field(1, ge=1, le=16)

    @model_validator(mode="after")
    def _rocketmq_keys(self) -> "NamesrvEntry":
        _check_extra_keys(self, namesrv_configs_from_dict)
        return self


#: Broker keys the entry itself decides: each node's identity comes from ``name``,
#: ``cluster`` and ``slaves`` (node ``<name>-0`` is the master, ``-1``.. the slaves) or ``dledger``.
_ENTRY_OWNED = {"brokerName": "the entry's `name` sets it", "brokerClusterName": "the entry's `cluster` sets it",
                "brokerId": "set per node: 0 for the master, 1..N for `slaves: N`", **DLEDGER_OWNED}


def _broker_entry_keys(d: dict[str, Any]) -> object:
    """BrokerConfig keys of a broker entry, plus what only makes sense per node: a
    ``brokerRole: SLAVE`` entry would make its master a slave with brokerId 0, which
    RocketMQ refuses at start ("Slave's brokerId must be > 0")."""
    for key, why in _ENTRY_OWNED.items():
        if key in d:
            raise ConfigError(key, f"{key}: not settable here, {why}")
    if d.get("brokerRole") == "SLAVE":
        raise ConfigError("brokerRole", "brokerRole: SLAVE is given to the slaves that `slaves: N` creates, and "
                          "the entry's own node (brokerId 0) is the master (ASYNC_MASTER or SYNC_MASTER)")
    return broker_configs_from_dict(d)


EXTRA_KEY_CHECKS: dict[str, tuple[type[BaseModel], Callable[[dict[str, Any]], object]]] = {
    "brokers": (BrokerEntry, _broker_entry_keys),
    "producers": (ProducerEntry, lambda d: config_from_dict(ProducerConfig, d)),
    "consumers": (ConsumerEntry, lambda d: config_from_dict(ConsumerConfig, d)),
}


class Topology(Strict):
    """A whole cluster, its workload, its faults and its duration."""

    name: str = Field(description="shown in reports and run ids; a directory name: 1-64 of A-Z a-z 0-9 _ -")
    seed: int = Field(42, ge=-(2**63), le=2**63 - 1)
    timing: Timing = Field(default_factory=Timing)
    namesrvs: int | NamesrvEntry = 1
    brokers: list[BrokerEntry] = Field(min_length=1, max_length=limits.MAX_ENTRIES)
    topics: list[TopicEntry] = Field(default_factory=list, max_length=limits.MAX_ENTRIES)
    producers: list[ProducerEntry] = Field(default_factory=list, max_length=limits.MAX_ENTRIES)
    consumers: list[ConsumerEntry] = Field(default_factory=list, max_length=limits.MAX_ENTRIES)
    faults: list[FaultSpec] = Field(default_factory=list, max_length=limits.MAX_ENTRIES)
    remoting: RemotingKey = None
    proxies: ProxiesKey = None
    duration: float = Field(60.0, gt=0, description="cluster seconds; '240s', '4m' or a number")
    expect: dict[str, Any] | None = Field(
        None, description="the run's verdict (docs/design.md §9): metric path of metrics.json (docs/metrics.md) "
                          "-> a number or true/false it must equal, or {max: x} / {min: x}",
        json_schema_extra=lambda schema: schema["anyOf"][0].update(additionalProperties=EXPECT_RULE_SCHEMA))

    @field_validator("name")
    @classmethod
    def _run_name(cls, v: str) -> str:
        if not limits.RUN_NAME_RE.fullmatch(v):
            raise ValueError(f"{v[:80]!r} is not a valid run name: 1-64 chars of A-Z a-z 0-9 _ -, "
                             "starting with a letter or digit (it names the run directory)")
        return v

    @field_validator("expect")
    @classmethod
    def _expect(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        """Rules well formed and every path one value metrics.json has (known from the metric
        registry, so ``validate`` catches a typo before the run, not after it)."""
        problems = expect_problems(v)
        if problems:
            raise ValueError("; ".join(problems))
        return v or None

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("namesrvs")
    @classmethod
    def _namesrv_count(cls, v: int | NamesrvEntry) -> int | NamesrvEntry:
        if isinstance(v, int) and not 1 <= v <= 16:
            raise ValueError("must be between 1 and 16")
        return v

    @property
    def namesrv_count(self) -> int:
        return self.namesrvs if isinstance(self.namesrvs, int) else self.namesrvs.count

    @property
    def namesrv_config(self) -> dict[str, Any]:
        return {} if isinstance(self.namesrvs, int) else dict(self.namesrvs.model_extra or {})

    @model_validator(mode="after")
    def _cross_references(self) -> "Topology":
        problems: list[str] = []
        names = [b.name for b in self.brokers]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"brokers: broker name {dup!r} appears more than once")
        for i, topic in enumerate(self.topics):
            for j, b in enumerate(topic.brokers):
                if b not in names:
                    problems.append(f"topics[{i}].brokers[{j}]: unknown broker {b!r} (known: {', '.join(names)})")
        problems += topology_problems(self) + v5.topology_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _host_limits(self) -> "Topology":
        """What this host can run (limits.py): a topology beyond it would validate and then stall
        or exhaust the machine at launch."""
        problems = limits.host_problems(self.namesrv_count, self.brokers, self.producers, self.consumers,
                                        self.timing.scale)
        if problems:
            raise ValueError("; ".join(problems))
        return self
