"""How one job reads and analyses some runs, planned from the files' names and sizes alone (the
driver lists them and never opens one; docs/design.md §7, "How it runs"):

- a run with fewer than :data:`SHARE_BYTES` of logs is **whole**: one task reads all its files
  and analyses it;
- a larger run is **cut**: its files are read in pieces of at most :data:`PIECE_BYTES`
  (line-aligned byte ranges, :class:`reports.core.lines.Piece`; small files packed together),
  so that no read task is much bigger than another, and its nodes are analysed in **shares** of
  about :data:`SHARE_BYTES` (whole nodes, largest first into the lightest share).
"""
from __future__ import annotations

import math
import os
import zlib
from dataclasses import dataclass

from rmqemu.reports.core.lines import Piece

#: A run with fewer bytes of logs is analysed whole, in the task that reads it: on a small run a
#: task per node costs more than the work it shares out (bench/README.md).
SHARE_BYTES = 16 * 1024 * 1024
#: The most bytes of a cut run one read task parses.
PIECE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class RunPlan:
    """One run's plan: ``whole``, or cut with ``shares`` (node -> share) of ``n_shares``."""

    run: int
    whole: bool
    shares: dict[str, int]
    n_shares: int = 1

    def share_of(self, node: str) -> int:
        """The share of ``node``'s lines: its planned one, or (a node no file is named after) a
        stable hash of its name, the same in every task."""
        got = self.shares.get(node)
        return got if got is not None else zlib.crc32(node.encode()) % self.n_shares


@dataclass(frozen=True)
class ReadTask:
    """The pieces one task reads, all of run ``run``."""

    run: int
    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class Plan:
    runs: tuple[RunPlan, ...]
    reads: tuple[ReadTask, ...]

    @property
    def cut(self) -> tuple[RunPlan, ...]:
        return tuple(r for r in self.runs if not r.whole)


def _pieces(files: list[tuple[str, int]], piece_bytes: int) -> list[Piece]:
    out = []
    for i, (path, size) in enumerate(files):
        name = os.path.basename(path.rstrip("/"))
        n = max(1, math.ceil(size / piece_bytes))
        step = math.ceil(size / n) if size else 0
        out += [Piece(path, name, i, k * step, -1 if k == n - 1 else (k + 1) * step) for k in range(n)]
    return out


def _packed(pieces: list[tuple[Piece, int]], capacity: int) -> list[tuple[Piece, ...]]:
    """Pieces packed into tasks of at most ``capacity`` bytes, largest first (first fit)."""
    bins: list[tuple[list[Piece], list[int]]] = []
    for piece, size in sorted(pieces, key=lambda p: -p[1]):
        for members, load in bins:
            if load[0] + size <= capacity:
                members.append(piece)
                load[0] += size
                break
        else:
            bins.append(([piece], [size]))
    return [tuple(members) for members, _ in bins]


def _shares(files: list[tuple[str, int]], total: int, share_bytes: int) -> tuple[dict[str, int], int]:
    """Nodes (the files under ``events/`` are named after them) into about ``total /
    share_bytes`` shares, largest first into the lightest."""
    nodes = sorted(((os.path.basename(p)[:-len(".jsonl")], s) for p, s in files
                    if os.path.basename(os.path.dirname(p)) == "events"), key=lambda x: -x[1])
    n = max(1, min(len(nodes), math.ceil(total / max(share_bytes, 1))))
    load = [0] * n
    out = {}
    for node, size in nodes:
        s = load.index(min(load))
        out[node] = s
        load[s] += size
    return out, n


def plan(run_files: list[list[tuple[str, int]]], share_bytes: int = SHARE_BYTES,
         piece_bytes: int = PIECE_BYTES) -> Plan:
    """The plan of runs whose files (``(path, bytes)``, :func:`reports.rundir.event_files`) are
    ``run_files``. ``share_bytes`` 0 cuts every run."""
    runs, reads = [], []
    for run, files in enumerate(run_files):
        total = sum(size for _, size in files)
        if total < share_bytes:
            runs.append(RunPlan(run, True, {}))
            reads.append(ReadTask(run, tuple(_pieces(files, max(total, 1)))))  # each file whole
            continue
        shares, n = _shares(files, total, share_bytes)
        runs.append(RunPlan(run, False, shares, n))
        sizes = dict(files)
        pieces = [(p, (sizes[p.path] if p.end < 0 else p.end) - p.start) for p in _pieces(files, piece_bytes)]
        reads += [ReadTask(run, group) for group in _packed(pieces, piece_bytes)]
    return Plan(tuple(runs), tuple(reads))
