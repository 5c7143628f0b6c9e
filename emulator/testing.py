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

from rmqemu.emulator.launcher.run_events import read_events  # noqa: F401 - part of the plugin's helpers
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology

if TYPE_CHECKING:
    from rmqemu.emulator.chaos import Cluster as ChaosCluster


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that started clusters says where their run directories are (events, logs)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        item.rmqemu_failed = True  # type: ignore[attr-defined]  (teardown then skips the drain)
    dirs = getattr(item, "rmqemu_run_dirs", None)
    if report.failed and dirs:
        report.sections.append(("rmqemu run directories", "\n".join(str(d) for d in dirs)))


@pytest.fixture
def start_cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., "ChaosCluster"]]:
    """``start_cluster(topology, **overrides)``: a started :class:`emulator.Cluster` (the fault
    verbs as methods, docs/testing.md); ``topology`` is a path or a dict; overrides replace
    top-level keys (``duration="60s"``, ``faults=[]``). Every cluster is finished at teardown,
    whatever the test did: faults healed, every process stopped; after a failed test without
    the end-of-run drain (the run is evidence, not a measurement, and a stuck group would
    hold the teardown for ``timing.drainTimeout``). A passed test whose cluster had a role
    error (``node.error``: a bug in rmqemu) errors at teardown."""
    from rmqemu.emulator.chaos import Cluster  # imported here: the plugin loads in every pytest run

    clusters: list[Cluster] = []

    def start(topology: str | Path | dict[str, Any], **overrides: Any) -> Cluster:
        if isinstance(topology, dict):
            data = dict(topology)
        else:
            data = load_topology(topology).model_dump(mode="json", exclude_unset=True)
        data.update(overrides)
        cluster = Cluster(parse_topology(data, "start_cluster"), run_dir=tmp_path / f"run-{len(clusters)}")
        clusters.append(cluster)
        request.node.rmqemu_run_dirs = [c.run_dir for c in clusters]  # for the failure report above
        cluster.start()
        return cluster

    try:
        yield start
    finally:
        errors = []
        drain = not getattr(request.node, "rmqemu_failed", False)
        for cluster in clusters:
            try:
                cluster.finish(drain=drain)
                if drain:  # the test passed: a role error (a bug in rmqemu) fails it here
                    cluster.check_role_errors()
            except Exception as exc:  # noqa: BLE001 - finish the others, then report
                errors.append(exc)
        if errors:
            raise errors[0]


@pytest.fixture(scope="session")
def rmqemu_spark() -> Iterator[Any]:
    """One local SparkSession per pytest worker (xdist runs each worker in its own process, so
    session scope is one JVM per worker), started by the first test that asks: pass it to
    ``cluster.metrics(rmqemu_spark)`` so a small run's metrics cost seconds, not a JVM start."""
    from rmqemu.reports.session import build_session, stop_session  # Spark loads only when a test asks

    session = build_session("local[2]", conf=TEST_SPARK_CONF, small_input=True)
    try:
        yield session
    finally:
        stop_session(session)


#: Sized for a test worker on a small host: two cores, a small driver.
TEST_SPARK_CONF = {
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
}


def _check_sections(paths: list[str], metrics: dict[str, Any]) -> None:
    """Refuse rules on a section a document limited by ``metrics(only=...)`` left out, saying
    so (rather than "no such path", which would send the user to docs/metrics.md)."""
    from rmqemu.errors import ExpectationError
    from rmqemu.metric_paths import GROUP, METRICS

    sections = {m.path for m in METRICS if "." not in m.path and m.unit == GROUP}
    missing = [(path, top) for path in paths
               if (top := path.split(".", 1)[0]) in sections and top not in metrics]
    if missing:
        raise ExpectationError("\n".join(
            f"expect.{path}: these metrics were computed without their {top!r} section "
            "(metrics(only=...)); ask for it too, e.g. metrics(spark, only=EXPECT) with this expect mapping"
            for path, top in missing))


def expect_metrics(metrics: dict[str, Any], expect: dict[str, Any], run_dir: Path | None = None) -> list[Any]:
    """Assert a run's metrics meet ``expect`` (the rules of a topology's ``expect:``,
    docs/design.md §9); the verdicts when they do. An AssertionError names every metric that
    missed, its value and by how much, and the run directory to look in."""
    from rmqemu.verdicts import judge, parse_expect

    rules = parse_expect(expect, "expect")
    _check_sections([r.path for r in rules], metrics)
    verdicts = judge(rules, metrics, "expect")
    failed = [v for v in verdicts if not v.passed]
    if failed:
        where = f"\nrun directory: {run_dir}" if run_dir is not None else ""
        raise AssertionError(f"{len(failed)} of {len(verdicts)} expectation(s) failed:\n"
                             + "\n".join(v.line() for v in failed) + where)
    return verdicts
