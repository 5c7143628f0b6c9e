"""The broker's side of the namesrv protocol: ``BrokerController.registerBrokerAll`` and
``BrokerOuterAPI`` (docs/rocketmq-model.md §2.1, §1.6).

- REGISTER_BROKER goes to all namesrvs **in parallel** (one ``Request`` each, timeout
  ``registerBrokerTimeoutMills``); the **first successful** answer of a round carries the master
  address a slave syncs from. Failures are only "logged" (ignored), as in RocketMQ.
- Without ``force`` the broker first asks every namesrv QUERY_DATA_VERSION and registers only if
  one of them reports a change or does not answer (``needRegister``).
- ``brokerPermission`` without both READ and WRITE rewrites every topic's perm in the wrapper
  (not in the broker's table).
- UNREGISTER_BROKER on graceful stop: RocketMQ sends them one namesrv at a time; the emulator
  sends them **in parallel** (each with RocketMQ's 3000 ms timeout), which only changes
  how long a stop takes when a namesrv does not answer.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Frame, RequestCode, ResponseCode, oneway, request
from rmqemu.emulator.protocol.message_ext import crc32
from rmqemu.emulator.roles.common.base import Action, Now, Oneway, Request
from rmqemu.emulator.roles.common.topic_config import DataVersion, TopicConfig, wrapper_json

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

UNREGISTER_TIMEOUT_MS = 3000


def _perm_rewritten(table: dict[str, TopicConfig], broker_permission: int) -> dict[str, TopicConfig]:
    full = 4 | 2  # PERM_READ | PERM_WRITE
    if broker_permission & full == full:
        return table
    return {name: tc.with_perm(broker_permission) for name, tc in table.items()}


class NamesrvRegistrar:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.rounds = 0

    def _header(self) -> dict[str, Any]:
        b = self.broker
        return {"brokerAddr": b.addr, "brokerName": b.cfg.brokerName, "brokerId": b.broker_id,
                "clusterName": b.cfg.brokerClusterName}

    def _register_header(self) -> dict[str, Any]:
        """REGISTER_BROKER's header; ``remotingAddr`` is rmqemu's: where real clients reach this broker."""
        b = self.broker
        extra = {"remotingAddr": b.remoting_addr} if b.remoting_addr else {}
        return {**self._header(), "haServerAddr": b.ha_server_addr, **extra}

    # ------------------------------------------------------------------ register

    def register_all(self, now: Now, oneway_: bool, force: bool) -> list[Action]:
        """``registerBrokerAll(checkOrderConfig, oneway, forceRegister)``."""
        table = _perm_rewritten(self.broker.topics.table, self.broker.cfg.brokerPermission)
        version = self.broker.topics.data_version
        if force:
            return self._do_register(table, version, oneway_)
        return self._need_register(version, lambda: self._do_register(
            _perm_rewritten(self.broker.topics.table, self.broker.cfg.brokerPermission),
            self.broker.topics.data_version, oneway_))

    def register_increment(self, tc: TopicConfig) -> list[Action]:
        """``registerIncrementBrokerData``: a wrapper with only ``tc`` and the current version."""
        table = _perm_rewritten({tc.topicName: tc}, self.broker.cfg.brokerPermission)
        return self._do_register(table, self.broker.topics.data_version, False)

    def _do_register(self, table: dict[str, TopicConfig], version: DataVersion, oneway_: bool) -> list[Action]:
        body = json.dumps({"topicConfigSerializeWrapper": wrapper_json(table, version), "filterServerList": []},
                          separators=(",", ":")).encode()
        fields = {**self._register_header(), "compressed": False, "bodyCrc32": crc32(body)}
        if oneway_:
            return [Oneway(addr, oneway(RequestCode.REGISTER_BROKER, fields, body))
                    for addr in self.broker.namesrv_addrs]
        self.rounds += 1
        state = {"done": False}
        timeout = self.broker.cfg.registerBrokerTimeoutMills

        def on_reply(resp: Frame | None, now: Now) -> list[Action]:
            if resp is None or resp.code != ResponseCode.SUCCESS or state["done"]:
                return []
            state["done"] = True  # the first result of the round is the one used (docs/rocketmq-model.md §2.1)
            return self.broker.on_register_result(resp.fields.get("masterAddr"), resp.fields.get("haServerAddr"), now)

        frame = request(RequestCode.REGISTER_BROKER, fields, body)
        return [Request(addr, frame, timeout, on_reply) for addr in self.broker.namesrv_addrs]

    def _need_register(self, version: DataVersion, then: Any) -> list[Action]:
        """QUERY_DATA_VERSION to every namesrv; register when any says changed or fails."""
        addrs = list(self.broker.namesrv_addrs)
        if not addrs:
            return []
        state = {"left": len(addrs), "need": False}
        timeout = self.broker.cfg.registerBrokerTimeoutMills

        def on_reply(resp: Frame | None, now: Now) -> list[Action]:
            changed = (resp is None or resp.code != ResponseCode.SUCCESS
                       or str(resp.fields.get("changed")).lower() == "true")
            state["need"] = state["need"] or changed
            state["left"] -= 1
            return then() if state["left"] == 0 and state["need"] else []

        frame = request(RequestCode.QUERY_DATA_VERSION, self._header(), version.to_json())
        return [Request(addr, frame, timeout, on_reply) for addr in addrs]

    # ------------------------------------------------------------------ unregister

    def unregister_all(self) -> list[Action]:
        frame = request(RequestCode.UNREGISTER_BROKER, self._header())
        timeout = UNREGISTER_TIMEOUT_MS
        return [Request(addr, frame, timeout, lambda resp, now: []) for addr in self.broker.namesrv_addrs]
