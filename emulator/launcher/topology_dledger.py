"""The topology's ``dledger:`` key: a broker group whose peers elect their master.

A broker entry with ``dledger: {peers: 3, preferred_leader: n1}`` is a DLedger group
(docs/rocketmq-model.md §8, RocketMQ 4.9.4's ``enableDLegerCommitLog``): nodes
``<name>-n0`` .. ``<name>-n{peers-1}``, one process each, that replicate one commit log and elect
its master among themselves, so the entry has no ``slaves``. The block sets the peers' RocketMQ
keys (``enableDLegerCommitLog``, ``dLegerGroup``, ``dLegerPeers``, ``dLegerSelfId``,
``preferredLeaderId``), so none of them may be set by hand. The model, its checks and the peers'
config live here; :mod:`emulator.launcher.topology` holds the key.
"""

from __future__ import annotations

from typing import Annotated, Any, Mapping

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from rmqemu.emulator.launcher.nodes import peer_ids, peer_node
from rmqemu.emulator.launcher.topology_remoting import boolean_too, switch

MIN_PEERS, MAX_PEERS, DEFAULT_PEERS = 2, 9, 3

#: The RocketMQ keys the ``dledger:`` block sets on each peer, and why a broker entry may not.
DLEDGER_OWNED = {
    "enableDLegerCommitLog": "the entry's `dledger:` block turns it on",
    "dLegerGroup": "the entry's `dledger:` block sets it to the entry's `name`",
    "dLegerPeers": "the entry's `dledger: {peers: N}` sets it (n0 .. n<N-1>, one node each)",
    "dLegerSelfId": "set per peer node: n0, n1, ... (node <name>-n0, <name>-n1, ...)",
    "preferredLeaderId": "the entry's `dledger: {preferred_leader: nX}` sets it",
}


class DLedger(BaseModel):
    """A DLedger group: how many peers, and which one should lead when it can."""

    model_config = ConfigDict(extra="forbid")

    peers: int = Field(DEFAULT_PEERS, description=f"peers of the group, {MIN_PEERS}..{MAX_PEERS}; peer ids "
                                                  "n0, n1, ..., nodes <name>-n0, <name>-n1, ...",
                       json_schema_extra={"minimum": MIN_PEERS, "maximum": MAX_PEERS})
    preferred_leader: str | None = Field(
        None, description="RocketMQ's preferredLeaderId: the peer id (n0, n1, ...) that takes over the "
                          "leadership whenever it can; none by default")

    @field_validator("peers")
    @classmethod
    def _peer_count(cls, v: int) -> int:
        if v < MIN_PEERS:
            raise ValueError(f"a DLedger group needs at least {MIN_PEERS} peers, got {v}")
        if v > MAX_PEERS:
            raise ValueError(f"a DLedger group has at most {MAX_PEERS} peers (one node process each), got {v}")
        return v

    @field_validator("preferred_leader")
    @classmethod
    def _a_peer(cls, v: str | None, info: ValidationInfo) -> str | None:
        peers = info.data.get("peers")  # absent when the count itself was refused
        if v is not None and peers is not None and v not in peer_ids(peers):
            raise ValueError(f"{v[:40]!r} is not a peer of this group: its peers are {', '.join(peer_ids(peers))}")
        return v


#: The ``dledger:`` field's type: a classic group (None) or a :class:`DLedger`.
DLedgerKey = Annotated[DLedger | None, BeforeValidator(switch(DLedger, "{peers: N, preferred_leader: nX}")), Field(
    description="a DLedger group (docs/rocketmq-model.md §8): its peers elect the master, replicate the "
                "commit log and have no slaves. true or {} for 3 peers, {peers: N, preferred_leader: nX}; "
                "false or absent: a master with `slaves`",
    json_schema_extra=boolean_too)]


def slaves_problem(slaves: int, dledger: DLedger | None) -> str | None:
    """A DLedger group's followers are its slaves: ``slaves:`` beside ``dledger:`` is refused."""
    if dledger is not None and slaves > 0:
        return (f"slaves: a DLedger group has no slaves: its peers replicate (remove `slaves: {slaves}` or "
                "the `dledger:` block)")
    return None


def raw_problems(data: Mapping[str, Any]) -> list[str]:
    """:func:`slaves_problem` on a file's raw broker entries, for a topology that failed elsewhere
    (pydantic skips an entry's own checks once one of its fields is bad)."""
    brokers = data.get("brokers")
    problems = []
    for i, entry in enumerate(brokers if isinstance(brokers, list) else []):
        if not isinstance(entry, dict) or entry.get("dledger") in (None, False):
            continue
        slaves = entry.get("slaves", 0)
        if type(slaves) is int and slaves > 0:
            problems.append(f"brokers[{i}].{slaves_problem(slaves, DLedger())}")
    return problems


def raw_peers(dledger: Any) -> int | None:
    """The peer count of a raw ``dledger:`` value (the default for ``true`` or ``{}``); None
    when it is malformed (the schema's own errors say how)."""
    peers = DEFAULT_PEERS if dledger is True else dledger.get("peers", DEFAULT_PEERS) if isinstance(
        dledger, dict) else None
    return peers if type(peers) is int and MIN_PEERS <= peers <= MAX_PEERS else None


def peer_config(broker: str, dledger: DLedger, self_id: str) -> dict[str, Any]:
    """The RocketMQ keys of one peer's node spec. ``dLegerPeers`` has RocketMQ's format
    (``n0-HOST:PORT;n1-...``) with node names where RocketMQ has addresses: the broker maps them
    to addresses with the node table the launcher pushes (``set_links``)."""
    cfg: dict[str, Any] = {
        "enableDLegerCommitLog": True,
        "dLegerGroup": broker,
        "dLegerPeers": ";".join(f"{p}-{peer_node(broker, p)}" for p in peer_ids(dledger.peers)),
        "dLegerSelfId": self_id,
    }
    if dledger.preferred_leader is not None:
        cfg["preferredLeaderId"] = dledger.preferred_leader
    return cfg
