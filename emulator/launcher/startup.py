"""What a cluster must be before its clients start (the launcher's start order: namesrvs,
brokers, then this, then clients): every broker node registered on every namesrv, then the
topology's topics created by admin on the master of each broker group.

A classic group's master is node ``<broker>-0``. A DLedger group's master is whichever peer its
election made master, so :func:`create_topics` waits for it (:func:`emulator.launcher.dledger.wait_master`);
the group's other peers, as a classic group's slaves, copy the topics from it by slave sync.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqemu.emulator.launcher import dledger as _dledger

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher

TOPIC_TIMEOUT_MS = 3000.0  # admin's UPDATE_AND_CREATE_TOPIC, in cluster ms (never below this in wall ms)


def wait_registered(cluster: "Launcher", timeout_s: float) -> None:
    """Wait until every live namesrv lists every broker node that said ready in its
    ``brokerLiveTable``. A DLedger peer registers once elected leader or follower (as master,
    brokerId 0, or as a slave), so this also waits for each group's first election."""
    brokers = {cluster.addrs[n] for n, p in cluster.plans.items() if p.role == "broker" and n in cluster.addrs}

    def all_registered() -> bool:
        for n, p in cluster.plans.items():
            if p.role == "namesrv" and n in cluster.procs and cluster.procs[n].alive():
                live = set(cluster.state(n).get("brokerLiveTable", {}))
                if not brokers <= live:
                    return False
        return True

    cluster.wait_for(all_registered, timeout_s, "every broker to register on every namesrv")


def create_topics(cluster: "Launcher") -> None:
    """Each topic of the topology on the master of each of its brokers: ``<broker>-0``, or the
    peer a DLedger group elected (waited for, bounded: a group without a master in time is a
    :class:`~rmqemu.errors.ClusterError` naming it)."""
    from rmqemu.emulator.launcher.admin import update_topic

    dledger, masters = _dledger.groups(cluster.plans.values()), {}
    timeout_ms = max(TOPIC_TIMEOUT_MS, TOPIC_TIMEOUT_MS * cluster.scale)
    for topic in cluster.topo.topics:
        for b in topic.brokers:
            if b not in masters:
                masters[b] = _dledger.wait_master(cluster, b) if b in dledger else f"{b}-0"
            update_topic(cluster.addrs[masters[b]], topic, timeout_ms=timeout_ms)
