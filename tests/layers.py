"""The project's import graph, read from the source with ``ast``, and the rules it must keep.

Imports run one way (README "Layout"): the contract (``rmqemu``: errors, event registry) <- roles
(pure state machines and the wire format) <- a node's runtime and transport <- the launcher core
<- faults <- the CLI and its wiring. ``reports`` stands beside them: it reads event files and
imports only the contract. Imports under ``if TYPE_CHECKING:`` are set aside (they never run);
an import inside a function counts like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGES = ("rmqemu", "emulator", "faults", "reports")

# Lowest first. A module belongs to the layer of its longest matching prefix.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("contract", ("rmqemu",)),
    ("roles", ("rmqemu.emulator.protocol", "rmqemu.emulator.roles")),
    ("node", ("rmqemu.emulator.node", "rmqemu.emulator.transport")),
    ("launcher", ("rmqemu.emulator.launcher",)),
    ("faults", ("rmqemu.faults",)),
    ("cli", ("rmqemu.emulator", "rmqemu.emulator.cli", "rmqemu.emulator.testing")),
)
# Beside the stack: may import the contract and itself only; only the CLI layer imports it.
REPORTS, REPORTS_PACKAGE = "reports", "rmqemu.reports"  # the layer, and its package
# Pairs (importer prefix, imported prefix) refused even where the layers would allow them.
FORBIDDEN = (("rmqemu.emulator.transport", "rmqemu.emulator.roles"),)

# The rooms of the roles layer, laid out like RocketMQ's modules (docs/design.md "Code layout"),
# and the other rooms each may import. A room is the first name under ``ROLES``: a subpackage or
# a module of its own. ``registry`` names every role class, so it may import any room.
ROLES = "rmqemu.emulator.roles"
ROOMS: dict[str, frozenset[str]] = {
    "common": frozenset(),
    "store": frozenset({"common"}),
    "namesrv": frozenset({"common", "real_clients"}),
    "dledger": frozenset({"common"}),  # a broker hosts it: DLedger's election and log know nothing of messages
    "broker": frozenset({"common", "store", "dledger", "real_clients"}),
    "client": frozenset({"common"}),
    "real_clients": frozenset({"common", "client"}),  # a server's view of a real client: the client's route maths
    "proxy": frozenset({"common", "client"}),  # RocketMQ 5's access layer: a client of the brokers, a server of gRPC
    # emulated RocketMQ 5 clients: the 4.x client's workload maths; of the proxy only its wire (NARROW)
    "client5": frozenset({"common", "client", "proxy"}),
    "registry": frozenset({"common", "store", "dledger", "namesrv", "broker", "client", "real_clients", "proxy",
                           "client5"}),
}
# (importer room, imported room) -> the only modules of the imported room it may import
NARROW: dict[tuple[str, str], frozenset[str]] = {
    ("client5", "proxy"): frozenset({f"{ROLES}.proxy", f"{ROLES}.proxy.v2", f"{ROLES}.proxy.messaging_v2_pb2"}),
}


def module_names(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """``{"rmqemu.emulator.node.runtime": Path(...)}`` for every module of the given packages."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name if package == "rmqemu" else f"rmqemu.{name}"] = path  # installed under rmqemu
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def imports_of(name: str, source: str, is_package: bool, known: Iterable[str]) -> set[str]:
    """The project modules that module ``name`` imports (``from a import b`` counts as ``a.b``
    when that is a module, else as ``a``)."""
    known = set(known)
    tree = ast.parse(source)
    skipped = _type_checking_nodes(tree)
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = here[: len(here) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # import a.b.c where only a.b is ours
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_names(root)
    return {name: imports_of(name, path.read_text(), path.name == "__init__.py", modules)
            for name, path in modules.items()}


def layer_of(module: str) -> str:
    if module == REPORTS_PACKAGE or module.startswith(REPORTS_PACKAGE + "."):
        return REPORTS
    best, best_len = "", -1
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = layer, len(prefix)
    if not best:
        raise KeyError(f"{module}: in no layer (add it to tests/layers.py LAYERS)")
    return best


_RANK = {layer: rank for rank, (layer, _) in enumerate(LAYERS)}


def direction_problems(graph: Mapping[str, set[str]]) -> list[str]:
    """One line per import that runs against the layers."""
    problems = []
    for importer in sorted(graph):
        source = layer_of(importer)
        for imported in sorted(graph[importer]):
            target = layer_of(imported)
            if source == REPORTS:
                ok = target in (REPORTS, "contract")
            elif target == REPORTS:
                ok = source == "cli"
            else:
                ok = _RANK[target] <= _RANK[source]
            for low, high in FORBIDDEN:
                if importer.startswith(low) and (imported == high or imported.startswith(high + ".")):
                    ok = False
            if not ok:
                problems.append(f"{importer} ({source}) imports {imported} ({target})")
    return problems


def room_of(module: str) -> str | None:
    """The roles room a module is in (``"broker"`` for ``...roles.broker.send_processor``), or None."""
    if not module.startswith(ROLES + "."):
        return None
    room = module[len(ROLES) + 1:].split(".")[0]
    if room not in ROOMS:
        raise KeyError(f"{module}: in no room of {ROLES} (add it to tests/layers.py ROOMS)")
    return room


def room_problems(graph: Mapping[str, set[str]]) -> list[str]:
    """One line per import between rooms of the roles layer that :data:`ROOMS` does not allow."""
    problems = []
    for importer in sorted(graph):
        source = room_of(importer)
        for imported in sorted(graph[importer]):
            target = room_of(imported)
            if source and target and target != source and target not in ROOMS[source]:
                problems.append(f"{importer} ({source}) imports {imported} ({target})")
            elif source and target and imported not in NARROW.get((source, target), frozenset({imported})):
                problems.append(f"{importer} ({source}) imports {imported} ({target}): only "
                                f"{', '.join(sorted(NARROW[(source, target)]))} of it")
    return problems


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)
