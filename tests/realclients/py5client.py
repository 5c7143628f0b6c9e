"""The official Python client of Apache RocketMQ 5 (PyPI's ``rocketmq-python-client``, gRPC to a
proxy) for the real-client tests: installed once per machine into a venv of its own in a cache
outside the repository, shared by every pytest-xdist worker (:mod:`tests.realclients.cache`), as
the C++ client is (:mod:`tests.realclients.pyclient`). Never into the project's venv: the client
asks for OpenTelemetry and grpcio-tools, and its protobuf floor would move the project's.

The cache root is ``$RMQEMU_PY5CLIENT_CACHE``, else ``$XDG_CACHE_HOME/rmqemu/py5client``, else
``~/.cache/rmqemu/py5client``; the venv is ``rocketmq-python-client-<version>/`` in it.

Pins (:data:`LOCK`): the client's own requirements are lower bounds only (``grpcio>=1.5``,
``protobuf>=6.33.5``, ``opentelemetry-*>=1.33``), so two machines a month apart would resolve two
different stacks, and protobuf against opentelemetry-proto has broken this client's installs
before (rocketmq-clients#1036). The whole resolved set (Python 3.11, May 2026's index) is a
constraints file: every install is the same one, and a pin that can no longer be had fails the
install loudly rather than drifting.

The scripts in ``py5/`` run under that venv's Python and print JSON lines (their docstrings give
the arguments and lines): :func:`run_script` runs one to its end, :func:`argv` starts a long one
through :func:`tests.realclients.drivers.start_program`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realclients import cache
from tests.realclients.cache import RealClientSetupError

PACKAGE, VERSION = "rocketmq-python-client", "5.1.2"
SCRIPTS = Path(__file__).resolve().parent / "py5"
#: The resolved dependency set of ``rocketmq-python-client==5.1.2`` on Python 3.11, as constraints.
LOCK = (
    "grpcio==1.85.3", "grpcio-tools==1.85.1", "protobuf==7.36.2", "setuptools==84.2.1",
    "opentelemetry-api==1.45.2", "opentelemetry-sdk==1.45.2", "opentelemetry-proto==1.45.2",
    "opentelemetry-exporter-otlp==1.45.2", "opentelemetry-exporter-otlp-proto-common==1.45.2",
    "opentelemetry-exporter-otlp-proto-grpc==1.45.2", "opentelemetry-exporter-otlp-proto-http==1.45.2",
    "opentelemetry-exporter-otlp-common==0.66b2", "opentelemetry-exporter-http-transport==0.66b2",
    "opentelemetry-semantic-conventions==0.66b2", "googleapis-common-protos==1.76.0",
    "typing_extensions==4.16.0", "requests==2.34.2", "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3", "idna==3.20", "urllib3==2.8.0",
)
#: What the installed client must import: the package (which pulls in grpc, protobuf and
#: OpenTelemetry) and its generated v2 service.
PROBE = ("import json, rocketmq, rocketmq.grpc_protocol.service_pb2 as s, google.protobuf as pb, grpc; "
         "print(json.dumps({'exports': sorted(rocketmq.__all__), 'service': "
         "s.DESCRIPTOR.services_by_name['MessagingService'].full_name, 'protobuf': pb.__version__, "
         "'grpcio': grpc.__version__}))")


def cache_root() -> Path:
    """``$RMQEMU_PY5CLIENT_CACHE`` > ``$XDG_CACHE_HOME/rmqemu/py5client`` > ``~/.cache/rmqemu/py5client``."""
    return cache.cache_root("RMQEMU_PY5CLIENT_CACHE", "py5client")


def install_dir(root: Path | None = None) -> Path:
    """The finished venv's directory (it may not exist yet)."""
    return (root or cache_root()) / f"{PACKAGE}-{VERSION}"


def is_complete(target: Path) -> bool:
    """True when ``target`` is a finished install of the pinned version and lock."""
    marker = cache.read_marker(target)
    return (marker.get("version") == VERSION and marker.get("lock") == list(LOCK)
            and (target / "bin" / "python").exists())


def python(root: Path | None = None) -> Path:
    """The Python of a venv holding the client at the pinned version, installing it on first use."""
    target = install_dir(root)
    return cache.install_once(target, is_complete, lambda tmp: _install(target.parent, tmp),
                              f"{PACKAGE}=={VERSION}") / "bin" / "python"


def _install(root: Path, tmp: Path) -> dict[str, Any]:
    """A venv in ``tmp`` with the client and the locked set, checked by the probe; the marker's fields."""
    venv = [sys.executable, "-m", "venv", "--without-pip", str(tmp)]
    cache.run_installer(venv, root, "python -m venv")
    constraints = tmp / "constraints.txt"
    constraints.write_text("\n".join(LOCK) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(tmp / "bin" / "python"), "install", "--no-input",
           "--disable-pip-version-check", "--cache-dir", str(root / "_pip-cache"), "-c", str(constraints),
           f"{PACKAGE}=={VERSION}"]
    cache.run_installer(pip, root, "pip install")
    loaded = probe(tmp / "bin" / "python", tmp)
    service = loaded.get("service")
    if "PushConsumer" not in loaded.get("exports", ()) or service != "apache.rocketmq.v2.MessagingService":
        raise RealClientSetupError(f"{PACKAGE}=={VERSION} does not look like the RocketMQ 5 client: {loaded}")
    freeze = [sys.executable, "-m", "pip", "--python", str(tmp / "bin" / "python"), "freeze", "--all"]
    return {"package": PACKAGE, "version": VERSION, "lock": list(LOCK), "commands": [venv, pip],
            "python": cache.version([str(tmp / "bin" / "python"), "--version"]), "protobuf": loaded["protobuf"],
            "grpcio": loaded["grpcio"], "freeze": cache.run_installer(freeze, root, "pip freeze").split()}


def probe(py: Path, cwd: Path) -> dict[str, Any]:
    """Import the client under ``py``; what it exports and the versions it runs on."""
    cmd = [str(py), "-c", PROBE]
    try:
        return json.loads(cache.run_installer(cmd, cwd, "importing rocketmq").strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RealClientSetupError(f"the client's probe printed no JSON: {' '.join(cmd)}") from exc


def argv(script: str) -> list[str]:
    """``[venv python, py5/<script>]``: the command before a script's JSON argument (or config file)."""
    return [str(python()), str(SCRIPTS / script)]


@dataclass
class ScriptRun:
    """What a script run by :func:`run_script` left: its pid (its process group's id too), JSON lines,
    exit code (``None``: killed at the timeout), the end of its stderr, seconds, lines not JSON."""

    pid: int
    lines: list[dict[str, Any]]
    returncode: int | None
    stderr: str
    seconds: float
    not_json: list[str] = field(default_factory=list)

    def events(self, name: str) -> list[dict[str, Any]]:
        """The lines whose ``event`` is ``name``."""
        return [line for line in self.lines if line.get("event") == name]


def run_script(script: str, args: dict[str, Any], timeout_s: float, home: Path | None = None) -> ScriptRun:
    """Run ``py5/<script> '<args as JSON>'`` under the client's venv to its end, at most ``timeout_s``.

    It runs in a session of its own. Once it has exited (or at the timeout), whatever is left of its
    process group is killed by group id, never by name, while the leader is still an unreaped
    zombie: the group id cannot have passed to another process. ``HOME`` is ``home`` (a temporary
    directory when None, removed after): the client writes its log to ``~/logs/rocketmq_python``."""
    py = python()
    own_home = home is None
    home = Path(tempfile.mkdtemp(prefix="py5-home-")) if home is None else home
    env = {**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([str(py), str(SCRIPTS / script), json.dumps(args)], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, env=env, cwd=home, start_new_session=True)
            deadline = started + timeout_s
            while not exited(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            timed_out = not exited(proc.pid)
            kill_group(proc.pid)  # the leader is alive or a zombie: the group is still ours
            code = proc.wait(timeout=30)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
    finally:
        if own_home:
            shutil.rmtree(home, ignore_errors=True)
    lines, not_json = parse_lines(stdout)
    return ScriptRun(proc.pid, lines, None if timed_out else code, cache.tail(stderr),
                     round(time.monotonic() - started, 3), not_json)


def exited(pid: int) -> bool:
    """True once child ``pid`` has exited, without reaping it (a zombie keeps its pid and group)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid`` if anything is left in it."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def parse_lines(out: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of ``out``, one a line, and the lines that were not JSON objects."""
    lines: list[dict[str, Any]] = []
    other: list[str] = []
    for raw in out.decode(errors="replace").splitlines():
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            lines.append(obj)
        else:
            other.append(raw)
    return lines, other
