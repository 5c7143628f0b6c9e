"""What a topology may ask of one host, and the names it may use (docs/design.md §5, "Limits"):
the bounds :mod:`emulator.launcher.topology` validates against, and :func:`host_problems` that checks them."""

from __future__ import annotations

import re
from typing import Any, Sequence

NAME_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")  # RocketMQ's topic/group character rule (docs/rocketmq-model.md §3.5)
#: The topology ``name`` becomes a directory name (``runs/<name>-<time>-<hex>``), so it is a slug,
#: stricter than RocketMQ's rule: no ``/``, ``.``, ``%`` or ``|``, a letter or digit first, <= 64 chars.
RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

# Limits of what one host runs (docs/design.md §5, "Limits"): each node is a Python process of
# ~25-50 MB that wakes every few wall milliseconds at scale 0.01; a 56-node cluster already runs
# its namesrv 1-3 s late on 2 cores. Past these numbers a run is not an emulation but a stall.
MAX_NODES = 128
MAX_PRODUCER_WALL_RATE = 2000.0  # messages per wall second of one producer instance (rate x batch / scale)
MAX_CLUSTER_WALL_RATE = 10000.0  # messages per wall second of all producers together
MAX_CLUSTER_WALL_BYTES = 64 * 1024 * 1024  # bytes per wall second of all producers together
MIN_SCALE = 0.001  # a 10 ms RocketMQ timer fires every 10 us wall below this: no process keeps up
MAX_ENTRIES = 1024  # entries of any one list (topics, faults, ...)
#: The end-of-run drain's bound (cluster s): at the default persistConsumerOffsetInterval (5 s) a
#: caught-up group's committed offsets reach the brokers within a few cluster seconds.
DEFAULT_DRAIN_TIMEOUT_S = 30.0


def host_problems(namesrvs: int, brokers: Sequence[Any], producers: Sequence[Any], consumers: Sequence[Any],
                  scale: float) -> list[str]:
    """What a topology's entries ask beyond the limits above, one message each (empty: it fits)."""
    problems = []
    nodes = (namesrvs + sum(len(b.node_names) for b in brokers)
             + sum(p.instances for p in producers) + sum(c.instances for c in consumers))
    if nodes > MAX_NODES:
        problems.append(f"nodes: {nodes} node processes, more than the {MAX_NODES} one host runs (limit)")
    total, total_bytes = 0.0, 0.0
    for i, p in enumerate(producers):
        wall = p.rate * p.batch / scale
        if wall > MAX_PRODUCER_WALL_RATE:
            problems.append(f"producers[{i}].rate: {p.rate:g} x batch {p.batch} at scale {scale:g} is "
                            f"{wall:.0f} messages per wall second per instance, more than "
                            f"{MAX_PRODUCER_WALL_RATE:.0f} (limit)")
        total += wall * p.instances
        total_bytes += wall * p.instances * p.size
    if total > MAX_CLUSTER_WALL_RATE:
        problems.append(f"producers: {total:.0f} messages per wall second in all, more than "
                        f"{MAX_CLUSTER_WALL_RATE:.0f} (limit)")
    if total_bytes > MAX_CLUSTER_WALL_BYTES:
        problems.append(f"producers: {total_bytes / 2**20:.0f} MiB per wall second in all, more than "
                        f"{MAX_CLUSTER_WALL_BYTES // 2**20} (limit)")
    return problems
