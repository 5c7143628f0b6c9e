"""A control command's missed deadline said as overload when the nodes' own lateness explains it
(docs/design.md §9, "Overload"): emulator/launcher/overload.py on hand-written event files, and
the launcher's link-table push over a fake control plane."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rmqemu.emulator.launcher import overload
from rmqemu.emulator.launcher.launcher import Launcher
from rmqemu.emulator.launcher.topology_load import parse_topology
from rmqemu.errors import ControlError, ControlTimeout, HostOverloaded


def lag(node: str, ts: float, p99: float, window: float = 1000.0) -> dict[str, Any]:
    return {"ts": ts, "node": node, "kind": "node.lag", "window_ms": window, "timers": 1,
            "p50_ms": p99, "p99_ms": p99, "max_ms": p99}


def write(path: Path, *events: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write("".join(json.dumps(e) + "\n" for e in events))


def namesrvs_far_behind(run: Path) -> None:
    """The reproduction's namesrvs (56 nodes at 0.01): lateness growing to seconds."""
    for node, lags in (("namesrv-0", (1255.0, 2211.0, 5440.0, 8644.0)), ("namesrv-1", (1470.0, 2774.0, 8298.0))):
        windows = (lag(node, 10_000.0 * (i + 1), p, window=p) for i, p in enumerate(lags))
        write(run / "events" / f"{node}.jsonl", *windows, {"ts": 50_000.0, "node": node, "kind": "ns.route"})


def missed(*nodes: str, timeout_ms: float = 5000.0) -> list[ControlTimeout]:
    return [ControlTimeout(n, "set_links", timeout_ms) for n in nodes]


def diagnose(run: Path, misses: list[ControlTimeout], nodes: int = 56, cores: int = 2) -> HostOverloaded | None:
    return overload.diagnose(run, misses, scale=0.01, configs=[{}], nodes=nodes, cores=cores)


def test_nodes_seconds_behind_are_named_with_their_lateness_and_a_scale_the_host_fits(tmp_path: Path) -> None:
    namesrvs_far_behind(tmp_path)
    err = diagnose(tmp_path, missed("namesrv-0", "namesrv-1"))
    assert isinstance(err, HostOverloaded) and err.nodes == {"namesrv-0": 8644.0, "namesrv-1": 8298.0}
    text = str(err)
    assert text.startswith("the host cannot keep up with 56 nodes at timing.scale 0.01: namesrv-0 and namesrv-1 "
                           "did not answer the launcher's 'set_links' within 5000 ms; their timers ran 8644 and 8298 "
                           "ms late")
    assert "healthy is below 5 ms" in text
    # by the CPU a node costs, 56 nodes fit 60 % of 2 cores from 0.082 (not the 18 the lateness says)
    assert "try timing.scale >= 0.082, where 56 nodes take at most 60 % of this host's 2 cores" in text


def test_a_node_not_that_late_or_without_node_lag_is_not_overload(tmp_path: Path) -> None:
    namesrvs_far_behind(tmp_path)
    write(tmp_path / "events" / "namesrv-0.jsonl", lag("namesrv-0", 60_000.0, 30.0))  # caught up since
    assert diagnose(tmp_path, missed("namesrv-0")) is None
    assert diagnose(tmp_path, missed("namesrv-1", "broker-a-0")) is None  # broker-a-0: no window at all
    assert diagnose(tmp_path, missed("namesrv-1", timeout_ms=20_000.0)) is None  # 8.3 s < half of 20 s
    assert diagnose(tmp_path, []) is None


def test_a_window_overlapping_a_pause_of_the_node_is_the_fault_not_the_host(tmp_path: Path) -> None:
    write(tmp_path / "events" / "broker-b-0.jsonl", lag("broker-b-0", 5_000.0, 2.0),
          lag("broker-b-0", 9_000.0, 3900.0, window=4000.0))  # resumed after 4 s stopped
    pause = {"node": "injector", "fault_id": "f1", "fault": "pause", "targets": ["broker-b-0"], "params": {}}
    write(tmp_path / "faults.jsonl", {"ts": 5_050.0, "kind": "fault.start", **pause},
          {"ts": 8_950.0, "kind": "fault.end", **pause})
    assert diagnose(tmp_path, missed("broker-b-0")) is None


def test_a_cluster_that_should_fit_blames_the_rest_of_the_host(tmp_path: Path) -> None:
    namesrvs_far_behind(tmp_path)
    err = diagnose(tmp_path, missed("namesrv-1"), nodes=7, cores=16)
    assert err is not None
    assert ("7 nodes at this scale should need about 1.2 of this host's 16 cores, so something else is using "
            "them: free the host, or try timing.scale >= 17 (an upper bound") in str(err)


def test_only_the_tail_of_a_large_event_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pg-0.jsonl"
    write(path, lag("pg-0", 1_000.0, 4000.0), *({"ts": 1_000.0 + i, "node": "pg-0", "kind": "send"} for i in range(50)),
          lag("pg-0", 2_000.0, 3000.0))
    monkeypatch.setattr(overload, "TAIL_BYTES", 300)  # cuts a send line in two
    assert overload.latest_lag(path) == 3000.0
    assert overload.latest_lag(tmp_path / "missing.jsonl") is None


class FakeControl:
    """The control plane as push_links sees it: ``slow`` nodes time out, ``refuse`` ones refuse."""

    def __init__(self, slow: set[str], refuse: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.slow, self.refuse, self.calls = slow, refuse, []

    def call(self, node: str, name: str, args: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
        self.calls.append(node)
        if node in self.slow:
            raise ControlTimeout(node, name, timeout_ms)
        if node in self.refuse:
            raise ControlError(f"{node}: {name!r} failed: ValueError: bad rule")
        return {}


@pytest.fixture
def cluster(tmp_path: Path) -> Launcher:
    """A launcher never started, its processes and control plane fakes."""
    topo = parse_topology({"name": "o", "namesrvs": 2, "brokers": [{"name": "broker-a"}],
                           "timing": {"scale": 0.01}}, "o")
    c = Launcher(topo, run_dir=tmp_path / "run")
    c.control.close()
    c.procs = {n: SimpleNamespace(alive=lambda: True) for n in c.plans}  # type: ignore[misc]
    yield c


def test_the_link_push_says_overload_when_the_nodes_that_missed_it_were_behind(cluster: Launcher) -> None:
    namesrvs_far_behind(cluster.run_dir)
    cluster.control = FakeControl({"namesrv-0", "namesrv-1"})  # type: ignore[assignment]
    with pytest.raises(HostOverloaded, match=r"^the host cannot keep up with 3 nodes at timing.scale 0.01: "
                                             r"namesrv-0 and namesrv-1 did not answer"):
        cluster.push_links()
    assert cluster.control.calls == ["namesrv-0", "namesrv-1", "broker-a-0"]  # every node was still tried


def test_the_link_push_keeps_its_message_when_lateness_does_not_explain_it(cluster: Launcher) -> None:
    namesrvs_far_behind(cluster.run_dir)
    cluster.control = FakeControl({"broker-a-0"})  # type: ignore[assignment]
    with pytest.raises(ControlError, match=r"^link table not acknowledged by 1 node\(s\): broker-a-0: no ack to "
                                           r"'set_links' within 5000 ms$") as info:
        cluster.push_links()
    assert not isinstance(info.value, HostOverloaded)
    cluster.control = FakeControl({"namesrv-0"}, refuse={"namesrv-1"})  # type: ignore[assignment]
    with pytest.raises(ControlError, match=r"by 2 node\(s\): namesrv-0: no ack .*; namesrv-1: 'set_links' failed") \
            as info:
        cluster.push_links()  # a refusal is no one's lateness: the failures as they are
    assert not isinstance(info.value, HostOverloaded)
