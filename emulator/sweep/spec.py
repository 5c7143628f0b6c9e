"""A sweep file and its grid: which runs a sweep is made of (docs/design.md §9, "Sweeps").

Pure functions over plain data, so the grid, the dotted ``vary`` paths and every error message
are tested without running anything. A sweep file::

    sweep: route-poll
    topology: topologies/chaos-quickstart.yaml      # relative to the sweep file, else to the cwd
    seeds: [1, 2, 3]                                # or {from: 1, count: 20}
    vary:
      producers.*.pollNameServerInterval: [5000, 30000]   # a list entry by name/group, or *
      timing.scale: [0.01, 0.02]
    nemesis: {kinds: [kill, pause], interval: 30s}  # optional, else the topology's faults
    parallel: auto                                  # or a number of runs at once
    expect: {consumption.lost: 0}                   # optional, else the topology's expect:

Every combination of the ``vary`` values is a *cell*; every cell runs once per seed.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqemu.emulator.launcher.topology import Topology
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology
from rmqemu.emulator.launcher.topology_yaml import read_yaml
from rmqemu.errors import TopologyError
from rmqemu.verdicts import Expectation, expect_problems, parse_expect

KEYS = {"sweep", "topology", "seeds", "vary", "nemesis", "parallel", "expect"}
MAX_RUNS = 1000  # cells x seeds: a typo in a range must not queue a week of runs
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")  # a run-directory slug, as a topology's name
LIST_KEYS = {"namesrvs": None, "brokers": "name", "topics": "name", "producers": "group", "consumers": "group"}


@dataclass(frozen=True)
class Cell:
    """One combination of the varied values (path -> value), and its index in the grid."""

    index: int
    values: dict[str, Any]

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values.items()) or "(no vary)"


@dataclass(frozen=True)
class SweepRun:
    """One run of the sweep: a cell and a seed; ``run_id`` names its directory."""

    cell: Cell
    seed: int

    @property
    def run_id(self) -> str:
        return f"c{self.cell.index:03d}-s{self.seed}"


@dataclass(frozen=True)
class SweepSpec:
    name: str
    source: str
    topology_path: Path
    seeds: list[int]
    vary: dict[str, list[Any]]
    nemesis: dict[str, Any] | None = None
    parallel: int | str = "auto"
    expect: list[Expectation] = field(default_factory=list)
    expect_raw: dict[str, Any] = field(default_factory=dict)
    expect_from: str = ""  # the file the rules came from: the sweep's, else its topology's

    def cells(self) -> list[Cell]:
        keys = list(self.vary)
        return [Cell(i, dict(zip(keys, combo, strict=True))) for i, combo in
                enumerate(itertools.product(*(self.vary[k] for k in keys)))]

    def runs(self) -> list[SweepRun]:
        return [SweepRun(cell, seed) for cell in self.cells() for seed in self.seeds]

    def to_dict(self) -> dict[str, Any]:
        """The grid as resolved (``sweep.json``): re-running with the same dict resumes."""
        return {"sweep": self.name, "topology": str(self.topology_path), "seeds": self.seeds, "vary": self.vary,
                "nemesis": self.nemesis, "parallel": self.parallel, "expect": self.expect_raw,
                "cells": [c.values for c in self.cells()]}


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file; every problem is one line of a TopologyError (exit 2)."""
    p = Path(path)
    if not p.is_file():
        raise TopologyError(str(p), ["file not found" if not p.exists() else "not a file"])
    data, _root = read_yaml(p)
    return parse_sweep(data, str(p), p.parent)


def parse_sweep(data: Any, source: str, base_dir: Path = Path(".")) -> SweepSpec:
    if not isinstance(data, dict):
        raise TopologyError(source, ["a sweep file is a mapping with keys sweep, topology, seeds, vary, ..."])
    problems = [f"{k}: unknown key (expected {', '.join(sorted(KEYS))})" for k in data if k not in KEYS]
    name = data.get("sweep")
    if not isinstance(name, str) or not NAME.match(name):
        problems.append("sweep: a name of 1-64 letters, digits, '_' or '-' (it names the sweep's directory)")
    topo_path = _topology_path(data.get("topology"), base_dir, problems)
    seeds = _seeds(data.get("seeds", [1]), problems)
    vary = _vary(data.get("vary") or {}, problems)
    parallel = data.get("parallel", "auto")
    if parallel != "auto" and (not isinstance(parallel, int) or isinstance(parallel, bool) or not 1 <= parallel <= 64):
        problems.append(f"parallel: 'auto' or a number of runs at once from 1 to 64, got {parallel!r}")
    nemesis = data.get("nemesis")
    if nemesis is not None and not (isinstance(nemesis, dict) and set(nemesis) <= {"kinds", "interval", "concurrency"}
                                    and nemesis.get("kinds")):
        problems.append("nemesis: a mapping {kinds: [...], interval: 30s, concurrency: 1} (kinds required)")
    problems += expect_problems(data.get("expect"))
    runs = max(1, len(seeds)) * _product(len(v) for v in vary.values())
    if runs > MAX_RUNS:
        problems.append(f"seeds x vary: {runs} runs, more than {MAX_RUNS} (split the sweep)")
    if problems:
        raise TopologyError(source, problems)
    base = load_topology(topo_path)  # the base topology itself must be valid ...
    expect_raw, expect_from = dict(data.get("expect") or {}), source
    if "expect" not in data and base.expect:  # no rules of its own: the topology's, as `report` does
        expect_raw, expect_from = dict(base.expect), str(topo_path)
    expect = parse_expect(expect_raw)
    spec = SweepSpec(name, source, topo_path, seeds, vary, nemesis, parallel, expect, expect_raw, expect_from)
    for cell in spec.cells():  # ... and so must every cell of the grid, before anything runs
        cell_topology(base, cell, seeds[0], f"{source} (cell {cell.label()})")
    return spec


def _product(sizes: Any) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def _topology_path(value: Any, base_dir: Path, problems: list[str]) -> Path:
    if not isinstance(value, str) or not value:
        problems.append("topology: the path of a topology file")
        return Path()
    for candidate in (base_dir / value, Path(value)):
        if candidate.is_file():
            return candidate
    problems.append(f"topology: {value}: no such file (looked next to the sweep file and in the current directory)")
    return Path(value)


def _seeds(value: Any, problems: list[str]) -> list[int]:
    if isinstance(value, dict) and set(value) == {"from", "count"} and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value.values()) and value["count"] >= 1:
        return list(range(value["from"], value["from"] + value["count"]))
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        if len(set(value)) != len(value):
            problems.append("seeds: each seed once")
        return list(value)
    problems.append("seeds: a list of integers or {from: N, count: M}")
    return [1]


def _vary(value: Any, problems: list[str]) -> dict[str, list[Any]]:
    if not isinstance(value, dict):
        problems.append("vary: a mapping from dotted topology paths to lists of values")
        return {}
    out = {}
    for path, values in value.items():
        if not isinstance(path, str) or not path or "" in path.split("."):
            problems.append(f"vary.{path}: a dotted path into the topology, e.g. timing.scale")
        elif not isinstance(values, list) or not values:
            problems.append(f"vary.{path}: a non-empty list of values")
        else:
            out[path] = values
    return out


def apply_vary(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``data`` (a topology as a dict) with ``path`` set to ``value``; a copy. In a list of
    entries (brokers, topics, producers, consumers), a path part names an entry by its name or
    group, or ``*`` for every entry. ``ValueError`` names what is missing."""
    out = copy.deepcopy(data)
    parts = path.split(".")
    targets: list[Any] = [out]
    for depth, part in enumerate(parts[:-1]):
        nxt: list[Any] = []
        for node in targets:
            if isinstance(node, list):
                key = LIST_KEYS.get(parts[depth - 1]) if depth else None
                matched = [e for e in node if isinstance(e, dict) and (part == "*" or e.get(key or "name") == part
                                                                        or e.get("group") == part)]
                if not matched:
                    raise ValueError(f"{'.'.join(parts[:depth + 1])}: no entry named {part!r}")
                nxt += matched
            elif isinstance(node, dict):
                nxt.append(node.setdefault(part, {}))
            else:
                raise ValueError(f"{'.'.join(parts[:depth + 1])}: not a mapping or a list")
        targets = nxt
    for node in targets:
        if not isinstance(node, dict):
            raise ValueError(f"{path}: its parent is not a mapping")
        node[parts[-1]] = value
    return out


def cell_topology(base: Topology, cell: Cell, seed: int, source: str) -> Topology:
    """The topology of one run: the base with the cell's values and the seed."""
    data = base.model_dump(mode="json", by_alias=True, exclude_unset=True)
    for path, value in cell.values.items():
        try:
            data = apply_vary(data, path, value)
        except ValueError as exc:
            raise TopologyError(source, [f"vary.{exc}"]) from None
    data["seed"] = seed
    return parse_topology(data, source)
