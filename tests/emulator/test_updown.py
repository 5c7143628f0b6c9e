"""How long ``rmqemu down`` waits for a supervisor (emulator.cli.updown), from a hand-made manifest."""

from __future__ import annotations

import json
from pathlib import Path

from rmqemu.emulator.cli.updown import DOWN_TIMEOUT_S, stop_wait_s

TOPOLOGY = {"name": "t", "namesrvs": 1, "brokers": [{"name": "broker-a"}], "timing": {"scale": 2.0}}


def test_down_waits_for_the_drain_bound_of_the_run_on_top_of_the_nodes_stops(tmp_path: Path) -> None:
    topo = {**TOPOLOGY, "timing": {"scale": 2.0, "drainTimeout": 100}}
    (tmp_path / "manifest.json").write_text(json.dumps({"scale": 2.0, "topology": topo}))
    assert stop_wait_s(tmp_path) == DOWN_TIMEOUT_S + 200  # 100 cluster s at scale 2


def test_the_default_drain_bound_counts_and_an_unreadable_manifest_falls_back(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"scale": 2.0, "topology": TOPOLOGY}))
    assert stop_wait_s(tmp_path) == DOWN_TIMEOUT_S + 60  # drainTimeout defaults to 30 cluster s
    (tmp_path / "manifest.json").write_text("{not json")
    assert stop_wait_s(tmp_path) == DOWN_TIMEOUT_S
    assert stop_wait_s(tmp_path / "gone") == DOWN_TIMEOUT_S
