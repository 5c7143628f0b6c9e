"""A DLedger member's own state: role, term, vote and leader (dledger 0.2.6 ``MemberState``).

The term and the vote survive a restart: every change of either returns the :class:`Persist` of
the ``currterm`` properties file DLedger keeps (``currTerm``, ``voteLeader``), and
:meth:`MemberState.load` reads it back. The rules of each change are docs/rocketmq-model.md §8.1.
"""

from __future__ import annotations

from enum import Enum

from rmqemu.emulator.roles.common.base import Persist
from rmqemu.emulator.roles.dledger.config import DLedgerConfig

TERM_FILE = "dledger/currterm"


class Role(str, Enum):
    CANDIDATE = "CANDIDATE"
    FOLLOWER = "FOLLOWER"
    LEADER = "LEADER"


class MemberState:
    """Role, term, vote and leader of one member. A fresh member is a CANDIDATE of term 0."""

    def __init__(self, cfg: DLedgerConfig) -> None:
        self.cfg = cfg
        self.role = Role.CANDIDATE
        self.term = 0
        self.vote_for: str | None = None
        self.leader_id: str | None = None
        self.known_max_term = -1
        self.peers_live: dict[str, bool] = {}
        self.transferee: str | None = None  # a leadership transfer in progress (leader only)
        self.term_to_take_leadership = -1  # the preferred leader's target term while it takes over

    def load(self, text: str | None) -> None:
        """``loadTerm``: the persisted term and vote, if any (a bad file is ignored, as DLedger does)."""
        props = _properties(text or "")
        try:
            self.term = int(props.get("currTerm", self.term))
        except ValueError:
            return
        self.vote_for = props.get("voteLeader") or None

    def persist(self) -> Persist:
        return Persist(TERM_FILE, f"currTerm={self.term}\nvoteLeader={self.vote_for or ''}\n")

    def set_vote(self, vote_for: str) -> Persist:
        self.vote_for = vote_for
        return self.persist()

    def next_term(self) -> Persist:
        """A candidate moves to the largest term it knows of, or one past its own; no vote yet."""
        assert self.role is Role.CANDIDATE, self.role
        self.term = self.known_max_term if self.known_max_term > self.term else self.term + 1
        self.vote_for = None
        return self.persist()

    def change_to_leader(self, term: int) -> None:
        assert term == self.term, (term, self.term)
        self.role, self.leader_id = Role.LEADER, self.cfg.self_id
        self.peers_live.clear()

    def change_to_follower(self, term: int, leader_id: str) -> None:
        assert term == self.term, (term, self.term)
        self.role, self.leader_id, self.transferee = Role.FOLLOWER, leader_id, None

    def change_to_candidate(self, term: int) -> None:
        """Step down (or stay) a candidate; a larger term is only remembered, the term itself moves
        at the next ballot (``nextTerm``)."""
        assert term >= self.term, (term, self.term)
        self.known_max_term = max(self.known_max_term, term)
        self.role, self.leader_id, self.transferee = Role.CANDIDATE, None, None

    def is_peer(self, peer_id: str | None) -> bool:
        return peer_id is not None and peer_id in self.cfg.peers


def _properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.split("\n"):
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out
