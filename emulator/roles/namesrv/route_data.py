"""The NameServer's route records (docs/rocketmq-model.md §1.1): ``QueueData``, ``BrokerData``,
``BrokerLiveInfo``, and what :class:`~emulator.roles.namesrv.route_info.RouteInfoManager` returns from a
registration or a removal. Plain values, kept apart from the manager's operations on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rmqemu.emulator.roles.common.topic_config import DataVersion


@dataclass(frozen=True)
class QueueData:
    """``QueueData``; JSON name ``topicSysFlag`` as from 4.9.0 (docs/rocketmq-model.md §1.1)."""

    brokerName: str
    readQueueNums: int
    writeQueueNums: int
    perm: int
    topicSysFlag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.brokerName,
            "readQueueNums": self.readQueueNums,
            "writeQueueNums": self.writeQueueNums,
            "perm": self.perm,
            "topicSysFlag": self.topicSysFlag,
        }


@dataclass
class BrokerData:
    cluster: str
    brokerName: str
    brokerAddrs: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Standard JSON (the 4.9.4 ``acceptStandardJsonOnly`` form): ids as string keys."""
        return {
            "cluster": self.cluster,
            "brokerName": self.brokerName,
            "brokerAddrs": {str(i): a for i, a in sorted(self.brokerAddrs.items())},
        }


@dataclass
class BrokerLiveInfo:
    lastUpdateTimestamp: float
    dataVersion: DataVersion
    channel: str | None
    haServerAddr: str | None
    remotingAddr: str | None = None  # rmqemu's: the broker's remoting port, for real clients' routes


@dataclass(frozen=True)
class RegisterResult:
    """What registerBroker answers a broker (docs/rocketmq-model.md §1.3 step 8) and whether a live entry is new."""

    masterAddr: str | None
    haServerAddr: str | None
    new_live_entry: bool
    new_at_id: bool = False  # the address was not the one registered under its brokerId (a DLedger role change)
    replaced_addr: str | None = None  # another address held this brokerId before and no longer does


@dataclass(frozen=True)
class Removed:
    """A broker address dropped from the live table, for the ``ns.broker`` event."""

    addr: str
    brokerName: str | None
    brokerId: int | None
