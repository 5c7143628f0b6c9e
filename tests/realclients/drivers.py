"""Run the real-client programs from a test (the ali-ons ones in ``js/``, the C++ client's in
``cpp/``): start, read what they printed, wait, stop.

Each program's stdout (one JSON object per line) goes straight to a file in the test's log
directory, not to a pipe: nothing is lost when a test fails or the reader is slow, the file is
there to read after the run, and there is no reader thread to manage. stderr (the client's own
warnings) goes to a file beside it. Each program runs in its own session (process group) with a
pipe on stdin: closing stdin asks it to stop, and if the test process dies the pipe closes and
the program stops by itself. Tests poll (``wait_for``/``wait_for_line``); nothing here sleeps
for a fixed time.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from tests.realclients import py5client, pyclient
from tests.realclients.alions import ali_ons_dir, node_path

JS_DIR = Path(__file__).resolve().parent / "js"
CPP_DIR = Path(__file__).resolve().parent / "cpp"
T = TypeVar("T")
_seq = itertools.count(1)


class NodeProcess(subprocess.Popen[bytes]):
    """A client program we started (node or the C++ client's Python), with the files its output goes to."""

    name: str
    stdout_path: Path
    stderr_path: Path
    config_path: Path
    home: Path | None = None  # the C++ client's $HOME (start_cpp): its library's log is in home/logs

    def lines(self) -> list[dict[str, Any]]:
        """The JSON lines it has printed so far."""
        return read_lines(self.stdout_path)

    def stderr_tail(self, lines: int = 30) -> str:
        """The end of its stderr, for assertion messages."""
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def describe(self) -> str:
        """Name, pid, exit code, files and stderr tail: what a failing assertion should show."""
        return (f"{self.name} pid={self.pid} returncode={self.poll()} stdout={self.stdout_path}\n"
                f"last lines: {self.lines()[-5:]}\nstderr tail:\n{self.stderr_tail()}")


def start_program(argv: list[str], cfg: dict[str, Any], log_dir: Path, name: str,
                  env: dict[str, str] | None = None) -> NodeProcess:
    """Run ``argv + [config file]`` (``cfg`` as JSON) with our environment plus ``env``; output to files
    in ``log_dir``, named after ``name``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-{next(_seq)}-{os.getpid()}"
    config_path = log_dir / f"{stem}.config.json"
    config_path.write_text(json.dumps(cfg, indent=2) + "\n")
    stdout_path, stderr_path = log_dir / f"{stem}.stdout.jsonl", log_dir / f"{stem}.stderr.log"
    full_env = {**os.environ, **(env or {})}
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = NodeProcess([*argv, str(config_path)], stdin=subprocess.PIPE, stdout=out, stderr=err, env=full_env,
                           cwd=log_dir, start_new_session=True)
    proc.name, proc.stdout_path, proc.stderr_path, proc.config_path = stem, stdout_path, stderr_path, config_path
    return proc


def start_node(script: str, cfg: dict[str, Any], log_dir: Path, name: str | None = None,
               env: dict[str, str] | None = None) -> NodeProcess:
    """Run ``node js/<script> <config file>`` with NODE_PATH at ali-ons; output to files in ``log_dir``."""
    return start_program([node_path(), str(JS_DIR / script)], cfg, log_dir, name or Path(script).stem,
                         {"NODE_PATH": str(ali_ons_dir() / "node_modules"), **(env or {})})


def start_cpp(cfg: dict[str, Any], log_dir: Path, name: str | None = None, script: str = "orderly.py") -> NodeProcess:
    """``cpp/<script>`` (``orderly.py``, ``normal.py`` for unordered messages, ``cfg["role"]``:
    producer or consumer; ``transaction.py``, a transactional producer, needs ``name``) under the
    C++ client's venv, its files kept in a directory of its own
    in ``log_dir``: the library writes its log to
    ``$ROCKETMQ_CLIENT_LOG_DIR`` (else ``/logs/rocketmq-client``, at the filesystem's root; the
    binding's ``set_log_root_path`` does nothing) and anything else under ``$HOME``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    name = name or str(cfg["role"])
    home = Path(tempfile.mkdtemp(prefix=f"{name}-home-", dir=log_dir))
    proc = start_program([str(pyclient.python()), str(CPP_DIR / script)], cfg, log_dir, name,
                         {"HOME": str(home), "ROCKETMQ_CLIENT_LOG_DIR": str(home / "logs")})
    proc.home = home
    return proc


def start_py5(script: str, cfg: dict[str, Any], log_dir: Path, name: str) -> NodeProcess:
    """``py5/<script>`` under the RocketMQ 5 Python client's venv (tests/realclients/py5client.py),
    with a ``$HOME`` of its own in ``log_dir``: the client writes its log to ``~/logs/rocketmq_python``.
    It stops when its stdin closes (``stop_on_stdin_eof``)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=f"{name}-home-", dir=log_dir))
    proc = start_program(py5client.argv(script), {"stop_on_stdin_eof": True, **cfg}, log_dir, name,
                         {"HOME": str(home), "OTEL_SDK_DISABLED": "true"})
    proc.home = home
    return proc


def start_producer(cfg: dict[str, Any], log_dir: Path, name: str | None = None) -> NodeProcess:
    """produce.js with ``cfg``; it also stops (after the send in flight) when its stdin closes."""
    return start_node("produce.js", {"stdin_eof_stops": True, **cfg}, log_dir, name or "producer")


def start_consumer(cfg: dict[str, Any], log_dir: Path, name: str | None = None) -> NodeProcess:
    """consume.js with ``cfg``; ``stop_process`` (or closing stdin) makes it close cleanly and print done."""
    return start_node("consume.js", {"stdin_eof_stops": True, **cfg}, log_dir, name or "consumer")


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of ``path`` (a line still being written is left out)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for raw in data.split(b"\n")[:-1]:  # the last piece has no newline yet (or is empty)
        if raw.strip():
            out.append(json.loads(raw))
    return out


def wait_for(fn: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.05,
             describe: Callable[[], str] | None = None) -> T:
    """Poll ``fn`` until it returns something truthy and return that; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}"
                                 + (f"\n{describe()}" if describe else ""))
        time.sleep(interval_s)


def wait_for_line(proc: NodeProcess, pred: Callable[[dict[str, Any]], bool], timeout_s: float,
                  what: str) -> dict[str, Any]:
    """The first line ``pred`` accepts, polling; fails early (with stderr) if the process exits without it."""
    def check() -> dict[str, Any] | None:
        exited = proc.poll() is not None
        found = next((line for line in proc.lines() if pred(line)), None)
        if found is None and exited:
            raise AssertionError(f"{proc.name} exited before printing {what}\n{proc.describe()}")
        return found

    return wait_for(check, timeout_s, what, describe=proc.describe)


def wait_exit(proc: NodeProcess, timeout_s: float) -> int:
    """Its exit code, polling up to ``timeout_s`` (AssertionError if it is still running)."""
    return wait_for(lambda: (proc.poll(),) if proc.poll() is not None else None, timeout_s,
                    f"{proc.name} to exit", describe=proc.describe)[0]


def group_alive(pgid: int) -> bool:
    """True while any process is left in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exited(proc: NodeProcess) -> bool:
    """True once ``proc`` has exited, without reaping it (a zombie keeps its pid, so its group id is ours)."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped elsewhere
        return True


def stop_process(proc: NodeProcess, grace_s: float = 10.0, term_s: float = 5.0) -> int:
    """Stop ``proc`` and return its exit code: close stdin (a clean stop), then SIGTERM, then SIGKILL
    to its process group, polling in between. Whatever is left of the group is killed before the
    leader is reaped, so a reused pid is never signalled."""
    if proc.stdin and not proc.stdin.closed:
        try:
            proc.stdin.close()
        except OSError:
            pass
    for wait_s, sig in ((grace_s, signal.SIGTERM), (term_s, signal.SIGKILL), (10.0, None)):
        deadline = time.monotonic() + wait_s
        while not _exited(proc) and time.monotonic() < deadline:
            time.sleep(0.02)
        if _exited(proc):
            break
        if sig is not None:
            os.killpg(proc.pid, sig)  # its own session: pgid == pid; the leader is alive or a zombie
    if proc.returncode is None and group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)  # children it left behind; the zombie leader keeps the pgid ours
    return proc.wait(timeout=10)


class NodeProcs:
    """The client programs a test started; ``stop_all`` at teardown stops each (a pytest fixture's job)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: list[NodeProcess] = []

    def producer(self, cfg: dict[str, Any], name: str | None = None) -> NodeProcess:
        """Start produce.js and track it."""
        self.procs.append(start_producer(cfg, self.log_dir, name))
        return self.procs[-1]

    def consumer(self, cfg: dict[str, Any], name: str | None = None) -> NodeProcess:
        """Start consume.js and track it."""
        self.procs.append(start_consumer(cfg, self.log_dir, name))
        return self.procs[-1]

    def py5(self, script: str, cfg: dict[str, Any], name: str) -> NodeProcess:
        """Start the RocketMQ 5 Python client's ``py5/<script>`` (:func:`start_py5`) and track it."""
        self.procs.append(start_py5(script, cfg, self.log_dir, name))
        return self.procs[-1]

    def cpp(self, cfg: dict[str, Any], name: str | None = None, script: str = "orderly.py") -> NodeProcess:
        """Start the C++ client's program ``cpp/<script>`` (:func:`start_cpp`) and track it."""
        self.procs.append(start_cpp(cfg, self.log_dir, name, script))
        return self.procs[-1]

    def stop_all(self, grace_s: float = 10.0) -> dict[str, int]:
        """Stop every tracked program (closing stdin on all first, so they stop together)."""
        for proc in self.procs:
            if proc.stdin and not proc.stdin.closed:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        return {proc.name: stop_process(proc, grace_s) for proc in self.procs}
