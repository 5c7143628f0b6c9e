"""RocketMQ 4.9 configuration objects with their real defaults (docs/rocketmq-model.md §1.4, §2.1, §2.2, §4.5-4.7).

Field names are RocketMQ's own keys (what a ``broker.conf`` or a topology file sets), so the
topology validator can check a user's keys against them and the roles can read them by the same
names. Importing this module has no side effects.

A broker's ``config`` dict mixes keys of ``BrokerConfig``, ``MessageStoreConfig`` and
``NettyServerConfig``, exactly as RocketMQ's ``broker.conf`` does (``MixAll.properties2Object`` is
applied to each object in turn): use :func:`broker_configs_from_dict` for it. A namesrv's mixes
``NamesrvConfig`` and ``NettyServerConfig``: :func:`namesrv_configs_from_dict`.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, fields
from typing import Any, Iterable, TypeVar

T = TypeVar("T")

BROKER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")
FLUSH_DISK_TYPES = ("ASYNC_FLUSH", "SYNC_FLUSH")

# Keys whose value must be one of a fixed set (RocketMQ enums given by name).
_CHOICES: dict[str, tuple[str, ...]] = {"brokerRole": BROKER_ROLES, "flushDiskType": FLUSH_DISK_TYPES}
_UNIT_MS = {"s": 1000, "m": 60 * 1000, "h": 60 * 60 * 1000, "d": 24 * 60 * 60 * 1000}
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


class ConfigError(ValueError):
    """A bad user-set key: ``key`` names it, the message says what is wrong."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass
class NettyServerConfig:
    """``remoting/.../netty/NettyServerConfig`` (the namesrv overrides listenPort to 9876)."""

    listenPort: int = 8888
    serverChannelMaxIdleTimeSeconds: int = 120  # docs/rocketmq-model.md §1.5: Netty ALL_IDLE closes the channel


@dataclass
class NamesrvConfig:
    """``common/.../namesrv/NamesrvConfig`` (docs/rocketmq-model.md §1.4)."""

    rocketmqHome: str = ""
    kvConfigPath: str = "~/namesrv/kvConfig.json"
    configStorePath: str = "~/namesrv/namesrv.properties"
    productEnvName: str = "center"
    clusterTest: bool = False
    orderMessageEnable: bool = False


@dataclass
class BrokerConfig:
    """``common/.../BrokerConfig`` defaults (docs/rocketmq-model.md §2.1, §2.2, §4.5, §4.6).

    ``brokerClusterName``/``brokerName``/``brokerId`` come from the node spec (``cluster``,
    ``broker``, ``broker_id``) rather than from ``config``; they are here because RocketMQ has them
    and the TopicConfigManager uses them (cluster and broker-name system topics).
    """

    brokerClusterName: str = "DefaultCluster"
    brokerName: str = "localhost"  # RocketMQ: the local hostname
    brokerId: int = 0
    brokerIP1: str = "127.0.0.1"
    brokerIP2: str = "127.0.0.1"
    namesrvAddr: str = ""
    brokerPermission: int = 6  # PERM_READ | PERM_WRITE
    defaultTopicQueueNums: int = 8
    autoCreateTopicEnable: bool = True
    clusterTopicEnable: bool = True
    brokerTopicEnable: bool = True
    autoCreateSubscriptionGroup: bool = True
    msgTraceTopicName: str = "RMQ_SYS_TRACE_TOPIC"
    traceTopicEnable: bool = False
    notifyConsumerIdsChangedEnable: bool = True
    longPollingEnable: bool = True
    shortPollingTimeMills: int = 1000
    slaveReadEnable: bool = False
    offsetCheckInSlave: bool = False
    enablePropertyFilter: bool = False
    registerNameServerPeriod: int = 30000
    forceRegister: bool = True
    registerBrokerTimeoutMills: int = 6000
    compressedRegister: bool = False
    updateMasterHAServerAddrPeriodically: bool = False
    startAcceptSendRequestTimeStamp: int = 0
    rejectTransactionMessage: bool = False
    transactionTimeOut: int = 6000  # a half is first checked once this old (docs/rocketmq-model.md §9)
    transactionCheckMax: int = 15  # checks before a half is discarded
    transactionCheckInterval: int = 60000  # the check service's period
    filterServerNums: int = 0
    flushConsumerOffsetInterval: int = 5000
    transferMsgByHeap: bool = True
    maxDelayTime: int = 40
    enableMixedMessageType: bool = False  # 5.x: UPDATE_AND_CREATE_TOPIC refuses message.type MIXED unless set
    # RocketMQ 5's POP (emulator/roles/broker/pop/, docs/rocketmq-model.md §10.2), 5.x names and defaults
    reviveQueueNum: int = 8  # queues of rmq_sys_REVIVE_LOG_<cluster>
    reviveInterval: int = 1000  # the revive service's period
    popPollingSize: int = 1024  # held POPs per (topic, group, queue) before POLLING_FULL
    maxPopPollingSize: int = 100000  # held POPs per broker before POLLING_FULL
    popFromRetryProbability: int = 20  # percent of POPs that read the retry topic first


@dataclass
class MessageStoreConfig:
    """``store/.../config/MessageStoreConfig`` keys the emulator reads (docs/rocketmq-model.md §2.2, §2.5, §4.6; HA keys
    from ``MessageStoreConfig`` 4.9, see emulator/roles/broker/ha.py)."""

    storePathRootDir: str = "~/store"
    brokerRole: str = "ASYNC_MASTER"
    flushDiskType: str = "ASYNC_FLUSH"
    maxMessageSize: int = 1024 * 1024 * 4
    haListenPort: int = 10912
    # HA (master -> slave commit-log replication, emulator/roles/broker/ha.py), RocketMQ 4.9 names/defaults
    haSendHeartbeatInterval: int = 1000 * 5  # slave reports its offset at least this often
    haHousekeepingInterval: int = 1000 * 20  # a connection silent this long is closed
    haTransferBatchSize: int = 1024 * 32  # bytes of commit log per transfer
    haSlaveFallbehindMax: int = 1024 * 1024 * 256  # SYNC_MASTER: further behind = SLAVE_NOT_AVAILABLE
    syncFlushTimeout: int = 1000 * 5  # SYNC_MASTER: wait for the slave up to this (4.9.x GroupCommitRequest)
    accessMessageInMemoryMaxRatio: int = 40
    maxTransferCountOnMessageInMemory: int = 32
    messageDelayLevel: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    flushDelayOffsetInterval: int = 1000 * 10  # ScheduleMessageService persists delayOffset.json this often
    fileReservedTime: int = 72
    # RocketMQ 5.x's timer store (timed messages, docs/rocketmq-model.md §10.4; emulator/roles/broker/timer/)
    timerWheelEnable: bool = True  # off: a timed send answers SYSTEM_ERROR
    timerMaxDelaySec: int = 3600 * 24 * 3  # a deliver instant further ahead answers MESSAGE_ILLEGAL
    timerPrecisionMs: int = 1000  # the wheel's slot; setTimerPrecisionMs snaps it to 100, 200, 500 or 1000
    timerFlushIntervalMs: int = 1000  # the timer checkpoint is persisted this often
    # DLedger mode (docs/rocketmq-model.md §8): the topology's `dledger:` block sets these, never a user.
    # dLegerPeers is RocketMQ's "n0-HOST:PORT;n1-..." with node names where RocketMQ has addresses.
    enableDLegerCommitLog: bool = False
    dLegerGroup: str = ""
    dLegerPeers: str = ""
    dLegerSelfId: str = "n0"
    preferredLeaderId: str = ""


def parse_delay_levels(text: str) -> list[int]:
    """``ScheduleMessageService.parseDelayLevel`` (docs/rocketmq-model.md §2.9): the delay of each
    level in ms, level 1 first. The string is split on single spaces; each item is a
    ``Long.parseLong`` number followed by one unit, ``s``, ``m``, ``h`` or ``d``. Where RocketMQ's
    parse fails (and the broker does not start) this raises :class:`ConfigError`."""
    levels = []
    for i, item in enumerate(text.split(" ")):
        num, unit = item[:-1], item[-1:]
        if unit not in _UNIT_MS or not _JAVA_LONG.fullmatch(num) or abs(int(num) * _UNIT_MS[unit]) >= 2**63:
            raise ConfigError("messageDelayLevel", f"messageDelayLevel: item {i + 1} ({item!r}) is not a number "
                              "followed by s, m, h or d (expected items separated by single spaces, like "
                              "'1s 5s 10s 30s 1m 2h 1d')")
        levels.append(int(num) * _UNIT_MS[unit])
    return levels


def _expected_type(cls: type, name: str) -> type:
    annotation = {f.name: f.type for f in fields(cls)}[name]
    # ``from __future__ import annotations`` makes these strings.
    return {"int": int, "bool": bool, "str": str, "float": float}[str(annotation)]


def _check_value(cls: type, key: str, value: Any) -> Any:
    want = _expected_type(cls, key)
    ok = isinstance(value, want)
    if want is int and isinstance(value, bool):
        ok = False  # YAML ``true`` is not a number
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise ConfigError(
            key, f"{key}: must be {want.__name__}, got {type(value).__name__} {value!r}"
        )
    if key in _CHOICES and value not in _CHOICES[key]:
        raise ConfigError(key, f"{key}: must be one of {', '.join(_CHOICES[key])}, got {value!r}")
    if key == "messageDelayLevel":
        parse_delay_levels(value)
    return value


def known_keys(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """``" (did you mean X?)"`` for a near miss of a known key (a misspelt RocketMQ or topology
    key is the common case: autoCreateTopicEnabel), else nothing."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    return f" (did you mean {close[0]}?)" if close else ""


def config_from_dict(cls: type[T], d: dict[str, Any] | None) -> T:
    """An instance of config dataclass ``cls`` with ``d``'s keys over RocketMQ's defaults.

    Raises :class:`ConfigError` (a ValueError) naming the first unknown key or wrong-typed value.
    """
    d = d or {}
    allowed = known_keys(cls)
    values: dict[str, Any] = {}
    for key, value in d.items():
        if key not in allowed:
            raise ConfigError(key, f"{key}: unknown {cls.__name__} key{did_you_mean(key, allowed)}")
        values[key] = _check_value(cls, key, value)
    return cls(**values)


def _split(classes: tuple[type, ...], d: dict[str, Any] | None, what: str) -> list[Any]:
    d = d or {}
    parts: list[dict[str, Any]] = [{} for _ in classes]
    for key, value in d.items():
        for i, cls in enumerate(classes):
            if key in known_keys(cls):
                parts[i][key] = value
                break
        else:
            known = set().union(*(known_keys(c) for c in classes))
            raise ConfigError(key, f"{key}: unknown {what} config key{did_you_mean(key, known)}")
    return [config_from_dict(cls, part) for cls, part in zip(classes, parts, strict=True)]


@dataclass
class BrokerConfigs:
    broker: BrokerConfig
    store: MessageStoreConfig
    netty: NettyServerConfig


def broker_configs_from_dict(d: dict[str, Any] | None) -> BrokerConfigs:
    """Route each key of a broker's mixed ``config`` dict to its RocketMQ config object."""
    b, s, n = _split((BrokerConfig, MessageStoreConfig, NettyServerConfig), d, "broker")
    if not d or "listenPort" not in d:
        n.listenPort = 10911  # BrokerStartup's default (docs/rocketmq-model.md §2.1)
    return BrokerConfigs(b, s, n)


@dataclass
class NamesrvConfigs:
    namesrv: NamesrvConfig
    netty: NettyServerConfig


def namesrv_configs_from_dict(d: dict[str, Any] | None) -> NamesrvConfigs:
    """Same for a namesrv (listenPort defaults to 9876 as in NamesrvStartup, docs/rocketmq-model.md §1.4)."""
    ns, n = _split((NamesrvConfig, NettyServerConfig), d, "namesrv")
    if not d or "listenPort" not in d:
        n.listenPort = 9876
    return NamesrvConfigs(ns, n)


def as_dict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)
