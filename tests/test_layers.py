"""Imports run one way and never in a circle (tests/layers.py says which way)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.layers import (
    PACKAGES,
    cycles,
    direction_problems,
    import_graph,
    imports_of,
    layer_of,
    module_names,
    room_of,
    room_problems,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The project's import graph, read once for the tests below (it parses every module)."""
    return import_graph(ROOT)


def test_the_project_imports_run_one_way(graph: dict[str, set[str]]) -> None:
    assert len(graph) > 100 and graph["rmqemu.emulator.node.main"], "the import graph was not read"
    assert direction_problems(graph) == []


def test_the_project_has_no_import_cycle(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_every_module_has_a_layer() -> None:
    for name in module_names(ROOT, PACKAGES):
        layer_of(name)  # raises for a module outside every layer
        room_of(name)  # raises for a module of the roles layer outside every room


def test_the_roles_rooms_import_as_rocketmq_modules_do(graph: dict[str, set[str]]) -> None:
    """client never imports broker or store, store never imports broker, common imports no room."""
    assert room_problems(graph) == []


def test_the_checker_sees_a_room_reaching_into_another() -> None:
    r = "rmqemu.emulator.roles"
    graph = {
        f"{r}.client.send_flow": {f"{r}.store.message_store", f"{r}.common.base"},   # client -> store
        f"{r}.store.message_store": {f"{r}.broker.broker"},                           # store -> broker
        f"{r}.common.base": {f"{r}.client.route_cache"},                               # common -> a room
        f"{r}.broker.broker": {f"{r}.store.message_store", f"{r}.real_clients"},      # allowed
        f"{r}.registry": {f"{r}.namesrv.namesrv", f"{r}.client.producer"},            # allowed
    }
    assert room_problems(graph) == [
        f"{r}.client.send_flow (client) imports {r}.store.message_store (store)",
        f"{r}.common.base (common) imports {r}.client.route_cache (client)",
        f"{r}.store.message_store (store) imports {r}.broker.broker (broker)",
    ]


def test_the_rocketmq_5_clients_take_only_the_proxys_wire() -> None:
    r = "rmqemu.emulator.roles"
    graph = {f"{r}.client5.wire": {f"{r}.proxy.v2", f"{r}.proxy.messaging_v2_pb2", f"{r}.proxy.sending"}}
    assert room_problems(graph) == [f"{r}.client5.wire (client5) imports {r}.proxy.sending (proxy): only "
                                    f"{r}.proxy, {r}.proxy.messaging_v2_pb2, {r}.proxy.v2 of it"]


def test_the_checker_sees_an_upward_import_and_a_cycle() -> None:
    e = "rmqemu.emulator"
    graph = {
        f"{e}.roles.broker": {f"{e}.launcher.launcher"},                          # roles reaching up
        f"{e}.launcher.launcher": {f"{e}.roles.broker"},                          # and back: a cycle
        f"{e}.transport.base": {f"{e}.roles.base"},                               # transport -> a role
        "rmqemu.reports.engine": {f"{e}.node.clock"},                             # reports -> emulator
        f"{e}.cli.main": {"rmqemu.reports.cli", "rmqemu.faults.injector"},        # allowed
    }
    assert direction_problems(graph) == [
        f"{e}.roles.broker (roles) imports {e}.launcher.launcher (launcher)",
        f"{e}.transport.base (node) imports {e}.roles.base (roles)",
        f"rmqemu.reports.engine (reports) imports {e}.node.clock (node)",
    ]
    assert cycles(graph) == [[f"{e}.launcher.launcher", f"{e}.roles.broker"]]


def test_imports_inside_functions_count_and_type_checking_ones_do_not() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from rmqemu.emulator.launcher.launcher import Launcher\n"
        "def f():\n    from rmqemu.faults.launch_glue import build_plan\n"
        "from . import sibling\n"
    )
    e = "rmqemu.emulator"
    known = {f"{e}.launcher.launcher", "rmqemu.faults.launch_glue", f"{e}.roles.sibling", f"{e}.roles.me"}
    assert imports_of(f"{e}.roles.me", source, False, known) == {"rmqemu.faults.launch_glue", f"{e}.roles.sibling"}


def test_nothing_imports_the_folders_by_their_bare_names() -> None:
    """emulator/, faults/ and reports/ install as rmqemu.emulator, rmqemu.faults, rmqemu.reports:
    a bare ``from reports...`` works from the repository root but not in a user's install."""
    folders = "(emulator|faults|reports)"
    bare = re.compile(rf"\bfrom {folders}(\.\w+)* import |(^\s*|[;\"']\s*)import {folders}\b", re.M)
    found = [f"{path.relative_to(ROOT)}: {m.group(0).strip()}"
             for folder in ("emulator", "faults", "reports", "rmqemu", "tests", "bench", "docs")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for m in bare.finditer(path.read_text())]
    assert found == []


def test_every_package_folder_is_installed() -> None:
    """pyproject.toml lists the packages a build installs: a subpackage missing there is absent from
    an installed copy (a user's, the example suite's), where its first import fails."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    homes = {f"rmqemu.{top}": ROOT / top for top in ("emulator", "faults", "reports")} | {"rmqemu": ROOT / "rmqemu"}
    found = {
        ".".join([name, *init.parent.relative_to(home).parts])
        for name, home in homes.items() for init in home.rglob("__init__.py") if "__pycache__" not in init.parts
    }
    assert found - listed == set(), "in pyproject.toml [tool.setuptools] packages, add these"
