"""pytest plugin: a cluster per test, safe under ``pytest -n auto``.

Every cluster gets its own run directory under the test's ``tmp_path``, random ports and its own
processes, and is stopped at teardown even when the test fails. Registered as the ``rmqemu``
pytest11 entry point, so a user's own test suite gets the ``start_cluster`` fixture by installing
rmqemu::

    def test_my_topology(start_cluster):
        cluster = start_cluster("topologies/quickstart.yaml", duration="60s")
        cluster.wait_for(lambda: ..., timeout_s=30, what="...")
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import psutil
import pytest

from emulator.launcher.topology_load import load_topology, parse_topology

if TYPE_CHECKING:
    from emulator.launcher.cluster import Cluster


def read_events(run_dir: Path, kind: str | None = None, node: str | None = None,
                where: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """All events of a run (``faults.jsonl`` included), ordered by ``ts``; a torn last line is skipped."""
    files = sorted((run_dir / "events").glob("*.jsonl")) + [run_dir / "faults.jsonl"]
    out = []
    for f in files:
        if not f.exists() or (node is not None and f.stem != node and f.name != "faults.jsonl"):
            continue
        for line in f.read_text().splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if (kind is None or ev.get("kind") == kind) and (node is None or ev.get("node") == node) \
                    and (where is None or where(ev)):
                out.append(ev)
    return sorted(out, key=lambda e: e.get("ts", 0.0))


def run_processes(run_dir: Path) -> list[tuple[int, float]]:
    """``(pid, create_time)`` of every node process the run's manifest lists (the latest
    incarnation of a restarted node): what a "no process left behind" check looks at."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return [(n["pid"], n["create_time"]) for n in manifest["nodes"].values() if n.get("pid")]


def _same_process(pid: int, create_time: float) -> psutil.Process | None:
    try:
        p = psutil.Process(pid)
        return p if abs(p.create_time() - create_time) < 1e-3 else None  # not a reused pid
    except psutil.NoSuchProcess:
        return None


def process_alive(pid: int, create_time: float) -> bool:
    p = _same_process(pid, create_time)
    try:
        return p is not None and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def process_stopped(pid: int, create_time: float) -> bool:
    """True while that very process is stopped by SIGSTOP."""
    p = _same_process(pid, create_time)
    try:
        return p is not None and p.status() == psutil.STATUS_STOPPED
    except psutil.NoSuchProcess:
        return False


def kill_survivors(procs: Iterable[tuple[int, float]]) -> None:
    """SIGKILL, by pid after checking create_time, whatever a failed test left alive."""
    for pid, ct in procs:
        if process_alive(pid, ct):
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def start_cluster(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """``start_cluster(topology, **overrides)``: a started :class:`Cluster`; ``topology`` is a
    path or a dict; overrides replace top-level keys (``duration="60s"``, ``faults=[]``)."""
    from emulator.launcher.cluster import Cluster  # imported here: the plugin loads in every pytest run

    clusters: list[Cluster] = []

    def start(topology: str | Path | dict[str, Any], **overrides: Any) -> Cluster:
        if isinstance(topology, dict):
            data = dict(topology)
        else:
            data = load_topology(topology).model_dump(mode="json", exclude_unset=True)
        data.update(overrides)
        from faults.launch_glue import check_topology_faults  # the plugin loads in every pytest run

        topo = check_topology_faults(parse_topology(data, "start_cluster"), "start_cluster")
        cluster = Cluster(topo, run_dir=tmp_path / f"run-{len(clusters)}")
        clusters.append(cluster)
        cluster.start()
        return cluster

    try:
        yield start
    finally:
        for cluster in clusters:
            cluster.stop()
