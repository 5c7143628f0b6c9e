"""Running a sweep's runs: in parallel as far as the host keeps up, resumable, with progress.

Each run is an ordinary ``rmqemu launch`` in its own process and run directory
(``<sweep dir>/<run id>/``), from a topology file the runner writes (``topologies/<run id>.json``:
the base with the cell's values and the seed), so every run can be replayed or reported alone.
A run is complete once ``<run>/done.json`` exists (written when its launch returned, unless a
signal stopped it: :data:`INTERRUPTED`); a
re-invoked sweep whose grid is unchanged reuses the newest directory of that sweep and skips
complete runs, and starts over an incomplete one (its directory is cleared first).

How many at once (``parallel: auto``): a compressed run is only faithful while the host keeps
every node's timers on time (docs/design.md §9, "Timing health"), and a node's CPU grows as the
scale shrinks. ``auto`` runs as many as fit in ``rmqemu.timing.CPU_BUDGET`` of the host's cores at
the cost per node measured by ``bench/capacity.py`` (``rmqemu.timing.cores_needed``), at least
one; and when a run's launcher warns that the host fell behind while others ran beside it, the
limit drops by one for the runs still to start (the warning stays in that run's log and its
metrics say ``timing.healthy: false``).

Where a run executes: the driver prepares it (:func:`prepare_run` writes its topology file) and
hands it to an executor, a callable ``RunTask -> RunResult``: :func:`run_one` in a thread here, or
a Spark task that calls the same :func:`run_one` on an executor (``emulator.sweep.on_spark``,
``rmqemu sweep --master``). Either way this module's loop decides how many run at once.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rmqemu import timing
from rmqemu.emulator.launcher.topology_load import load_topology, plan_nodes
from rmqemu.emulator.sweep.spec import SweepRun, SweepSpec, cell_topology
from rmqemu.errors import RunDirError

FELL_BEHIND = "warning: the host is falling behind"


#: exit codes of a launch stopped by SIGINT/SIGTERM (128 + the signal): the run was cut short, so
#: it stays incomplete (no ``done.json``) and the next invocation runs it again
INTERRUPTED = {128 + signal.SIGINT, 128 + signal.SIGTERM}
#: ``exit_code`` of a run whose launch could not even be started (``RunResult.error`` says why)
NOT_STARTED = -1
_PR_SET_PDEATHSIG = 1
try:  # loaded here, not in the forked child: dlopen between fork and exec may deadlock
    _LIBC: ctypes.CDLL | None = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:
    _LIBC = None


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    exit_code: int
    fell_behind: bool
    skipped: bool = False  # complete from an earlier invocation
    error: str = ""  # why the run could not be started (exit_code NOT_STARTED), or its executor failed

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "exit_code": self.exit_code, "fell_behind": self.fell_behind}


@dataclass(frozen=True)
class RunTask:
    """Everything one run needs, as plain picklable data: a Spark task carries it to an executor,
    which only needs rmqemu installed and the sweep directory (``out``) at the same path."""

    run_id: str
    out: Path
    topology_file: Path
    seed: int
    cell: dict[str, Any]
    launch_args: tuple[str, ...]  # after ``launch TOPOLOGY --run-dir DIR``: the nemesis options
    running: int = 1  # runs executing at once when it started (did it share the host?)


def auto_parallel(nodes: int, scale: float, cores: int | None = None) -> int:
    """Runs at once that the host keeps healthy, by the measured cost per node (module docstring)."""
    cores = cores or os.cpu_count() or 1
    return max(1, int(cores * timing.CPU_BUDGET / timing.cores_needed(nodes, scale)))


def runs_at_once(spec: SweepSpec, parallel: int | None = None) -> int:
    """Runs at once: ``parallel`` (the command line), else the file's number, else ``auto``:
    what the grid's most demanding cell allows."""
    if parallel or isinstance(spec.parallel, int):
        return int(parallel or spec.parallel)
    base = load_topology(spec.topology_path)
    limits = []
    for cell in spec.cells():
        topo = cell_topology(base, cell, spec.seeds[0], spec.source)
        limits.append(auto_parallel(len(plan_nodes(topo)), topo.timing.scale))
    return min(limits)


def sweep_dir(spec: SweepSpec, root: Path, fresh: bool = False) -> Path:
    """The newest directory of this sweep with the same grid (resume), else a new one."""
    grid = spec.to_dict()
    if not fresh and root.is_dir():
        for old in sorted(root.glob(f"{spec.name}-*"), reverse=True):
            try:
                if json.loads((old / "sweep.json").read_text())["grid"] == grid:
                    return old.resolve()
            except (OSError, ValueError, KeyError, TypeError):
                continue
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = (root / f"{spec.name}-{stamp}").resolve()
    try:
        out.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        raise RunDirError(f"{out}: cannot create the sweep directory ({exc.strerror or exc})") from None
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    (out / "sweep.json").write_text(json.dumps({"grid": grid, "source": spec.source, "created": created}, indent=2),
                                    encoding="utf-8")
    return out


def all_complete(spec: SweepSpec, out: Path) -> bool:
    """Every run of the grid is complete (has its ``done.json``): a re-invocation runs nothing."""
    return all((out / run.run_id / "done.json").is_file() for run in spec.runs())


def run_sweep(spec: SweepSpec, out: Path, parallel: int | None = None,
              on_done: Callable[[RunResult], None] = lambda r: None,
              execute: Callable[[RunTask], RunResult] | None = None,
              cancel: Callable[[], Any] | None = None) -> list[RunResult]:
    """Run every run of the grid that is not complete yet; every run's result, in grid order.

    ``execute`` runs one prepared run (:func:`run_one` here; a Spark task with ``--master``),
    called from this loop's threads, at most ``parallel`` at once. On an interrupt (Ctrl-C,
    SIGTERM as KeyboardInterrupt) nothing more starts, ``cancel`` stops the runs under way, and
    the interrupt propagates once their executors have returned."""
    execute, cancel = execute or run_one, cancel or stop_launches
    _LAUNCHES.stopped = False
    base = load_topology(spec.topology_path)
    runs = spec.runs()
    limit = runs_at_once(spec, parallel)
    results: dict[str, RunResult] = {}
    todo: list[SweepRun] = []
    for run in runs:
        done = out / run.run_id / "done.json"
        if done.is_file():
            data = json.loads(done.read_text())
            results[run.run_id] = RunResult(run.run_id, out / run.run_id, int(data["exit_code"]),
                                            bool(data["fell_behind"]), skipped=True)
            on_done(results[run.run_id])
        else:
            todo.append(run)
    state = _Limit(limit)
    with ThreadPoolExecutor(max_workers=max(1, limit)) as pool:
        active: dict[Future[RunResult], SweepRun] = {}
        try:
            while todo or active:
                while todo and len(active) < state.limit:
                    run = todo.pop(0)
                    task = prepare_run(spec, base, run, out, running=len(active) + 1)
                    active[pool.submit(execute, task)] = run
                finished, _ = wait(list(active), return_when=FIRST_COMPLETED)
                for fut in finished:
                    active.pop(fut)
                    result = fut.result()
                    results[result.run_id] = result
                    if result.fell_behind and state.shared:
                        state.lower()
                    on_done(result)
                state.shared = len(active) > 0
        except BaseException:
            for fut in active:
                fut.cancel()
            cancel()
            raise
    return [results[r.run_id] for r in runs]


class _Limit:
    """The number of runs at once, lowered (never below 1) when the host fell behind."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.shared = limit > 1
        self.lock = threading.Lock()

    def lower(self) -> None:
        with self.lock:
            self.limit = max(1, self.limit - 1)


def prepare_run(spec: SweepSpec, base: Any, run: SweepRun, out: Path, running: int = 1) -> RunTask:
    """On the driver: write the run's topology (``topologies/<run id>.json``: the base with the
    cell's values and the seed) and say how to launch it."""
    topo = cell_topology(base, run.cell, run.seed, f"{spec.source} ({run.run_id})")
    topo_file = out / "topologies" / f"{run.run_id}.json"
    topo_file.parent.mkdir(parents=True, exist_ok=True)
    topo_file.write_text(json.dumps(topo.model_dump(mode="json", by_alias=True, exclude_unset=True), indent=1),
                         encoding="utf-8")
    args: list[str] = []
    if spec.nemesis:
        kinds = spec.nemesis["kinds"]
        args += ["--nemesis", ",".join(kinds) if isinstance(kinds, list) else str(kinds),
                 "--interval", str(spec.nemesis.get("interval", "30s")),
                 "--concurrency", str(spec.nemesis.get("concurrency", 1))]
    return RunTask(run.run_id, out, topo_file, run.seed, dict(run.cell.values), tuple(args), running)


def run_one(task: RunTask) -> RunResult:
    """Launch one run and wait for it: ``rmqemu launch`` in a child process, its output in
    ``<run>/launch.log``, then ``done.json`` (the run is complete). The one way a sweep runs a
    run, in a thread of :func:`run_sweep` or in a Spark task on an executor.

    A launch cut short by SIGINT/SIGTERM (or killed) leaves no ``done.json``: the run is
    incomplete and a re-invoked sweep starts it over. Never raises: a run that could not start
    is a result with ``exit_code`` :data:`NOT_STARTED` and the reason in ``error``."""
    run_dir = task.out / task.run_id
    try:
        if run_dir.exists():  # an incomplete run of an earlier invocation: start it over
            shutil.rmtree(run_dir)
        args = [sys.executable, "-c", "from rmqemu.emulator.cli.main import main; main()", "launch",
                str(task.topology_file), "--run-dir", str(run_dir), "--no-progress", *task.launch_args]
        run_dir.mkdir(parents=True)
        with open(run_dir / "launch.log", "w", encoding="utf-8") as log:
            code = _LAUNCHES.run(args, log)
        fell_behind = FELL_BEHIND in (run_dir / "launch.log").read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return RunResult(task.run_id, run_dir, NOT_STARTED, False, error=f"cannot start the run: {exc}")
    result = RunResult(task.run_id, run_dir, code, fell_behind and task.running > 1)
    if code < 0 or code in INTERRUPTED:
        result.error = (f"the launch was stopped ({f'signal {-code}' if code < 0 else f'exit {code}'}); "
                        "run again to redo it")
        return result
    (run_dir / "done.json").write_text(json.dumps({**result.to_dict(), "seed": task.seed, "cell": task.cell}),
                                       encoding="utf-8")
    return result


class _Launches:
    """The launches this process started and still waits for, so an interrupted sweep can stop
    them (:func:`stop_launches`).

    Each launch runs in its own session: a Ctrl-C at the terminal, or the SIGHUP a Spark
    worker daemon sends its process group when it shuts down, reaches the sweep (or the worker)
    only; the launch is then stopped by SIGTERM, which it handles like Ctrl-C (heal the faults,
    stop the nodes). It gets that SIGTERM from :func:`stop_launches`, or from the kernel when the
    thread that started it dies (``PR_SET_PDEATHSIG``): a sweep or a Spark worker killed
    outright still has its launches stop their nodes."""

    def __init__(self) -> None:
        self.running: dict[subprocess.Popen[bytes], int] = {}  # launch -> its pidfd
        self.lock = threading.Lock()
        self.stopped = False  # set by stop(): a launch about to start does not (run_sweep clears it)

    def run(self, args: list[str], log: Any) -> int:
        with self.lock:
            if self.stopped:
                return 128 + signal.SIGTERM
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=_stop_with_parent)
            self.running[proc] = os.pidfd_open(proc.pid)  # taken before anything can reap it
        try:
            return proc.wait()
        finally:
            with self.lock:
                os.close(self.running.pop(proc))

    def stop(self) -> int:
        """SIGTERM every launch still running, through its pidfd (a reaped pid is never hit)."""
        with self.lock:
            self.stopped = True
            for pidfd in self.running.values():
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGTERM)
                except ProcessLookupError:
                    pass  # exited, not reaped yet
            return len(self.running)


_LAUNCHES = _Launches()


def stop_launches() -> int:
    """Ask every run this process is executing to stop (SIGTERM, as Ctrl-C); how many."""
    return _LAUNCHES.stop()


def _stop_with_parent() -> None:  # runs in the child between fork and exec
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
