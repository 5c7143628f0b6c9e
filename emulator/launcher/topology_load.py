"""Reading a topology file, turning every problem into a "path: message" line, and naming nodes.

Validation happens before anything is spawned (docs/design.md §5): a bad file raises
:class:`~rmqemu.errors.TopologyError` listing every problem, and the CLI exits with code 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from yaml.nodes import Node

from rmqemu.emulator.launcher import topology as _models
from rmqemu.emulator.launcher import topology_client5 as _client5
from rmqemu.emulator.launcher import topology_dledger as _dledger_models
from rmqemu.emulator.launcher import topology_order as _order_models
from rmqemu.emulator.launcher import topology_remoting as _remoting_models
from rmqemu.emulator.launcher import topology_tx as _tx_models
from rmqemu.emulator.launcher.nodes import NodeInfo, Role, peer_ids, peer_node
from rmqemu.emulator.launcher.topology import EXTRA_KEY_CHECKS, BrokerEntry, Topology, extra_key_problems
from rmqemu.emulator.launcher.topology_order import ordered_workload
from rmqemu.emulator.launcher.topology_yaml import read_yaml, with_lines
from rmqemu.emulator.roles.common.broker_config import did_you_mean
from rmqemu.errors import TopologyError


def format_loc(loc: tuple[Any, ...]) -> str:
    """``('brokers', 1, 'slaves')`` -> ``brokers[1].slaves``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


_BOUND_WORDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("<=", "le"),
    "less_than": ("<", "lt"),
}


def _topology_keys() -> list[str]:
    """Every key name (and alias) of the topology models: what a misspelt key is compared with."""
    names: set[str] = set()
    modules = (_models, _remoting_models, _order_models, _dledger_models, _tx_models)
    for model in [value for module in modules for value in vars(module).values()]:
        if isinstance(model, type) and issubclass(model, BaseModel) and model is not BaseModel:
            for name, info in model.model_fields.items():
                names.update(n for n in (name, info.alias) if n)
    return sorted(names)


def _messages(exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p in ("int", "NamesrvEntry", "float", "str")))
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        ctx = err.get("ctx") or {}
        if err["type"] in _BOUND_WORDS:
            op, key = _BOUND_WORDS[err["type"]]
            bound = ctx[key]
            got = repr(err["input"])
            got = got if len(got) <= 40 else f"{got[:20]}...({len(got)} chars)"
            msg = (f"must be {op} {bound:g}, got {got}" if isinstance(bound, float)
                   else f"must be {op} {bound}, got {got}")
        elif err["type"] == "extra_forbidden":
            msg = "unknown key" + did_you_mean(str(loc[-1]) if loc else "", _topology_keys())
        elif err["type"] == "missing":
            msg = "required key is missing"
        for piece in msg.split("; ") if ";" in msg and err["type"] == "value_error" else [msg]:
            if ": " in piece and (not loc or loc == ("expect",) and piece.startswith("expect.")):
                problems.append(piece)
            elif loc and loc[0] in _KEYED_SECTIONS and err["type"] == "value_error" and _KEY_PIECE.match(piece):
                key, rest = piece.split(": ", 1)  # a RocketMQ key's problem: path it to the key
                problems.append(f"{format_loc(loc)}.{key}: {rest}")
            else:
                problems.append(f"{format_loc(loc)}: {piece}")
    return list(dict.fromkeys(problems))


_KEY_PIECE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*: ")
_KEYED_SECTIONS = ("brokers", "producers", "consumers", "namesrvs")  # entries taking RocketMQ keys


def _independent_problems(data: dict[str, Any]) -> list[str]:
    """Checks pydantic skips once a field of the same entry is bad (its after-validators do not
    run): unknown or mistyped RocketMQ keys and references to unknown brokers. Run on the raw
    data so that a file with several kinds of mistakes gets all of them in one pass."""
    problems = []
    for section, (model, check) in EXTRA_KEY_CHECKS.items():
        entries = data.get(section)
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict):
                extra = {k: v for k, v in entry.items() if k not in model.model_fields}
                v5 = section in ("producers", "consumers") and entry.get("client") == "v5"
                problems += [f"{section}[{i}].{p}"  # a v5 entry's keys are the RocketMQ 5 client's settings
                             for p in extra_key_problems(extra, _client5.check_config if v5 else check)]
    brokers, topics = data.get("brokers"), data.get("topics")
    if isinstance(brokers, list) and isinstance(topics, list):
        names = [b.get("name") for b in brokers if isinstance(b, dict)]
        for i, topic in enumerate(topics):
            refs = topic.get("brokers") if isinstance(topic, dict) else None
            for j, b in enumerate(refs if isinstance(refs, list) else []):
                if isinstance(b, str) and b not in names:
                    problems.append(f"topics[{i}].brokers[{j}]: unknown broker {b!r} (known: "
                                    f"{', '.join(str(n) for n in names)})")
    return (problems + _remoting_models.raw_problems(data, _raw_broker_nodes(data.get("brokers")))
            + _dledger_models.raw_problems(data))


def _raw_broker_nodes(brokers: Any) -> list[str] | None:
    """The node names of raw broker entries (``<name>-0``.., or a DLedger group's ``<name>-n0``..);
    None when an entry is too malformed to name its nodes (its own problems say why)."""
    if not isinstance(brokers, list) or not all(isinstance(b, dict) for b in brokers):
        return None
    names = []
    for b in brokers:
        name, slaves, dledger = b.get("name"), b.get("slaves", 0), b.get("dledger")
        peers = _dledger_models.raw_peers(dledger) if dledger not in (None, False) else 0
        if not isinstance(name, str) or type(slaves) is not int or not 0 <= slaves <= 8 or peers is None:
            return None
        names += ([peer_node(name, p) for p in peer_ids(peers)] if peers
                  else [f"{name}-{i}" for i in range(slaves + 1)])
    return names


def parse_topology(data: Any, source: str = "<topology>", yaml_root: Node | None = None) -> Topology:
    """Validate a topology's data: schema, RocketMQ keys, references between entries, limits.

    With ``yaml_root`` (the composed YAML of a file) each problem gets its line number.
    The ``faults:`` entries are checked for shape here; whether their targets exist and their
    partitions can be built is the fault layer's question (``faults.launch_glue.check_topology_faults``),
    asked by every command before it spawns anything."""
    if not isinstance(data, dict):
        raise TopologyError(source, ["(top level): expected a mapping of keys (name, brokers, ...)"])
    try:
        topo = Topology.model_validate(data)
    except ValidationError as exc:
        problems = _messages(exc) + _independent_problems(data)
        raise TopologyError(source, with_lines(list(dict.fromkeys(problems)), yaml_root)) from None
    return topo


def load_topology(path: str | Path) -> Topology:
    """Read and validate a YAML topology file (bounded: see :mod:`emulator.launcher.topology_yaml`)."""
    p = Path(path)
    if not p.is_file():
        raise TopologyError(str(p), ["file not found" if not p.exists() else "not a file"])
    try:
        data, root = read_yaml(p)
    except OSError as exc:  # unreadable (permissions), a name too long, ...
        raise TopologyError(str(p), [f"cannot read: {exc.strerror or exc}"]) from None
    return parse_topology(data, str(p), root)


def override(topo: Topology, source: str, **updates: Any) -> Topology:
    """The topology with CLI overrides (``--seed``, ``--duration``) checked by the same rules as
    the file (``--duration 0`` is refused as ``duration: 0`` is); problems are named by option."""
    updates = {k: v for k, v in updates.items() if v is not None}
    if not updates:
        return topo
    try:
        return Topology.model_validate({**topo.model_dump(mode="json", by_alias=True), **updates})
    except ValidationError as exc:
        problems = [f"--{p}" if p.split(":")[0] in updates else p for p in _messages(exc)]
        raise TopologyError(source, problems) from None


@dataclass(frozen=True)
class NodePlan:
    """One node to spawn, before ports exist: what the launcher turns into a spec file.

    A peer of a DLedger group has its DLedger id in ``peer`` (``n0``, ...) and no ``broker_id``:
    its broker decides that on each election (0 as master, ``int(peer[1:]) + 1`` as follower)."""

    name: str
    role: str  # namesrv | broker | producer | consumer
    config: dict[str, Any] = field(default_factory=dict)
    broker: str | None = None
    broker_id: int | None = None
    cluster: str | None = None
    group: str | None = None
    workload: dict[str, Any] = field(default_factory=dict)
    peer: str | None = None

    def node_info(self) -> NodeInfo:
        """The injector's view of this node (:class:`emulator.launcher.nodes.NodeInfo`)."""
        role: Role = self.role  # type: ignore[assignment]
        return NodeInfo(self.name, role, self.broker, self.broker_id, self.group, self.peer)


def _subscription(item: str) -> dict[str, str]:
    topic, _, expr = item.partition(":")
    return {"topic": topic, "expression": expr or "*"}


def _classic_broker(b: BrokerEntry, bid: int) -> NodePlan:
    """The master (``bid`` 0) or a slave of a classic broker entry."""
    cfg = {**(b.model_extra or {}), "brokerName": b.name, "brokerClusterName": b.cluster, "brokerId": bid}
    if bid > 0:
        cfg["brokerRole"] = "SLAVE"
    return NodePlan(f"{b.name}-{bid}", "broker", cfg, b.name, bid, b.cluster)


def _dledger_peers(b: BrokerEntry) -> list[NodePlan]:
    """The peers of a DLedger group entry, one node each, with the keys ``dledger:`` sets."""
    assert b.dledger is not None
    base = {**(b.model_extra or {}), "brokerName": b.name, "brokerClusterName": b.cluster}
    return [NodePlan(peer_node(b.name, p), "broker", {**base, **_dledger_models.peer_config(b.name, b.dledger, p)},
                     b.name, None, b.cluster, peer=p) for p in peer_ids(b.dledger.peers)]


def plan_nodes(topo: Topology) -> list[NodePlan]:
    """All nodes in start order: namesrvs, masters and DLedger peers, slaves, producers, consumers.

    Names follow docs/design.md §5: ``namesrv-<i>``, ``<broker>-<brokerId>``, ``<broker>-<peer>``
    (``broker-a-n0``), ``<group>-<i>``; consumer entries sharing a group continue that group's
    numbering so names stay unique.
    """
    nodes = [NodePlan(f"namesrv-{i}", "namesrv", topo.namesrv_config) for i in range(topo.namesrv_count)]
    for b in topo.brokers:
        nodes += _dledger_peers(b) if b.dledger is not None else [_classic_broker(b, 0)]
    for b in topo.brokers:  # a DLedger group has none (validated)
        nodes += [_classic_broker(b, bid) for bid in range(1, b.slaves + 1)]
    if topo.proxies is not None:
        nodes += [NodePlan(name, "proxy", topo.proxies.config) for name in topo.proxies.names]
    counters: dict[str, int] = {}
    for p in topo.producers:
        workload = {"topics": p.topics, "rate": p.rate, "size": p.size, "mode": p.mode,
                    "batch": p.batch, "keys": p.keys, "delay_level": p.delay_level, "body": p.body,
                    **ordered_workload(p.ordered), **_tx_models.transaction_workload(p.transaction)}
        workload.update(_client5.workload(p, topo) if p.client == "v5" else {})
        for _ in range(p.instances):
            i = counters.get(p.group, 0)
            counters[p.group] = i + 1
            nodes.append(NodePlan(f"{p.group}-{i}", "producer", {} if p.client == "v5" else dict(p.model_extra or {}),
                                  group=p.group,
                                  workload=workload))
    for c in topo.consumers:
        workload = {"subscribe": [_subscription(s) for s in c.subscribe], "allocate": c.allocate,
                    "allocate_params": c.allocate_params, "messageModel": c.messageModel,
                    "fail_rate": c.fail_rate, **({"orderly": True} if c.orderly else {}),
                    **(_client5.workload(c, topo) if c.client == "v5" else {})}
        for _ in range(c.instances):
            i = counters.get(c.group, 0)
            counters[c.group] = i + 1
            nodes.append(NodePlan(f"{c.group}-{i}", "consumer", {} if c.client == "v5" else dict(c.model_extra or {}),
                                  group=c.group,
                                  workload=workload))
    names = [n.name for n in nodes]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise TopologyError(topo.name, [f"nodes: name {n!r} is used by two nodes (rename a group or broker)"
                                        for n in clashes])
    return nodes
