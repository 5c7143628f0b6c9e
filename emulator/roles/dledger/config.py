"""What a DLedger member is configured with: dledger 0.2.6's ``DLedgerConfig`` defaults, which
RocketMQ 4.9.4's ``DLedgerCommitLog`` leaves as they are (docs/rocketmq-model.md §8.1).

Every duration is RocketMQ's own milliseconds; the node runtime scales them like any other
interval. Peers are named as DLedger names them (``n0``, ``n1``, ...) and reached at the node
whose name the broker's spec gives for each (``dLegerPeers``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PEER_ID_RE = re.compile(r"n[0-9]{1,2}")  # DLedgerRoleChangeHandler reads the id as int(selfId[1:])


@dataclass(frozen=True)
class DLedgerConfig:
    """One member's settings. ``peers`` are the group's ids in order, ``self_id`` among them."""

    group: str
    self_id: str
    peers: tuple[str, ...]
    preferred_leader: str | None = None  # RocketMQ's preferredLeaderId (dledger's preferredLeaderIds)
    heart_beat_time_interval_ms: int = 2000
    max_heart_beat_leak: int = 3
    min_vote_interval_ms: int = 300
    max_vote_interval_ms: int = 1000
    max_wait_ack_time_ms: int = 2500
    max_push_time_out_ms: int = 1000
    max_pending_requests_num: int = 10000
    rpc_timeout_ms: int = 3000  # DLedgerRpcNettyService: every vote, heartbeat and push waits 3 s
    max_leadership_transfer_wait_index: int = 1000
    leadership_transfer_wait_timeout: int = 1000
    min_take_leadership_vote_interval_ms: int = 30
    max_take_leadership_vote_interval_ms: int = 100
    check_preferred_leader_ms: int = 1000  # DLedgerServer's checkPreferredLeader task period

    def __post_init__(self) -> None:
        problems = [f"peer id {p!r} is not n<number>" for p in self.peers if not PEER_ID_RE.fullmatch(p)]
        if len(set(self.peers)) != len(self.peers):
            problems.append(f"peer ids repeat: {', '.join(self.peers)}")
        if self.self_id not in self.peers:
            problems.append(f"self id {self.self_id!r} is not one of the peers {', '.join(self.peers)}")
        if self.preferred_leader is not None and self.preferred_leader not in self.peers:
            problems.append(f"preferred leader {self.preferred_leader!r} is not one of the peers")
        if problems:
            raise ValueError(f"DLedger group {self.group!r}: " + "; ".join(problems))

    def quorum(self, count: int) -> bool:
        """``MemberState.isQuorum``: a strict majority of the peers."""
        return count >= len(self.peers) // 2 + 1

    @property
    def others(self) -> tuple[str, ...]:
        return tuple(p for p in self.peers if p != self.self_id)


def slave_broker_id(self_id: str) -> int:
    """The brokerId a peer registers as a slave: ``DLedgerCommitLog.getId()`` is ``int(selfId[1:])``
    and ``changeToSlave`` takes it plus one, so n0 is 1, n1 is 2."""
    return int(self_id[1:]) + 1
