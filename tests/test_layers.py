"""Imports run one way and never in a circle (tests/layers.py says which way)."""

from __future__ import annotations

from pathlib import Path

from tests.layers import PACKAGES, cycles, direction_problems, import_graph, imports_of, layer_of, module_names

ROOT = Path(__file__).resolve().parents[1]


def test_the_project_imports_run_one_way() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 100 and graph["emulator.node.main"], "the import graph was not read"
    assert direction_problems(graph) == []


def test_the_project_has_no_import_cycle() -> None:
    assert cycles(import_graph(ROOT)) == []


def test_every_module_has_a_layer() -> None:
    for name in module_names(ROOT, PACKAGES):
        layer_of(name)  # raises for a module outside every layer


def test_the_checker_sees_an_upward_import_and_a_cycle() -> None:
    graph = {
        "emulator.roles.broker": {"emulator.launcher.launcher"},       # roles reaching up
        "emulator.launcher.launcher": {"emulator.roles.broker"},       # and back: a cycle
        "emulator.transport.base": {"emulator.roles.base"},           # transport -> a role
        "reports.load": {"emulator.node.clock"},                      # reports -> emulator
        "emulator.cli.main": {"reports.cli", "faults.injector"},     # allowed
    }
    assert direction_problems(graph) == [
        "emulator.roles.broker (roles) imports emulator.launcher.launcher (launcher)",
        "emulator.transport.base (node) imports emulator.roles.base (roles)",
        "reports.load (reports) imports emulator.node.clock (node)",
    ]
    assert cycles(graph) == [["emulator.launcher.launcher", "emulator.roles.broker"]]


def test_imports_inside_functions_count_and_type_checking_ones_do_not() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from emulator.launcher.launcher import Launcher\n"
        "def f():\n    from faults.launch_glue import build_plan\n"
        "from . import sibling\n"
    )
    known = {"emulator.launcher.launcher", "faults.launch_glue", "emulator.roles.sibling", "emulator.roles.me"}
    assert imports_of("emulator.roles.me", source, False, known) == {"faults.launch_glue", "emulator.roles.sibling"}
