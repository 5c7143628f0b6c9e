"""One install of a real client per machine, in a cache outside the repository, shared by every
pytest-xdist worker: the machinery ali-ons (:mod:`tests.realclients.alions`) and the C++ client
(:mod:`tests.realclients.pyclient`) both use.

An install is a directory ``<root>/<name>/`` that appears whole, by an atomic rename of a
temporary directory beside it (``.<name>.tmp-*``), with a marker file (:data:`MARKER`) written
last inside it; ``<root>/<name>.lock`` serialises installers (fcntl). A finished install is
reused without the lock or the installer. Any failure is a :class:`RealClientSetupError` naming
the command and the tail of its stderr: the real-client tests fail on it, never skip.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MARKER = "INSTALLED.json"  # written last inside the temporary directory, before the rename
INSTALL_TIMEOUT_S = 600.0
LOCK_TIMEOUT_S = INSTALL_TIMEOUT_S + 60.0  # another worker may be in the middle of an install


class RealClientSetupError(RuntimeError):
    """A real client cannot be had: the real-client tests fail (never skip) with this."""


def cache_root(env_var: str, leaf: str) -> Path:
    """``$<env_var>`` > ``$XDG_CACHE_HOME/rmqemu/<leaf>`` > ``~/.cache/rmqemu/<leaf>``."""
    if os.environ.get(env_var):
        return Path(os.environ[env_var]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "rmqemu" / leaf


def read_marker(target: Path) -> dict[str, Any]:
    """The finished install's marker, ``{}`` when there is none (or it is unreadable)."""
    try:
        marker = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return {}
    return marker if isinstance(marker, dict) else {}


def install_once(target: Path, is_complete: Callable[[Path], bool], build: Callable[[Path], dict[str, Any]],
                 what: str) -> Path:
    """``target``, built on first use: ``build(tmp)`` fills a temporary directory beside it and returns
    the marker's fields; the marker (plus the install's seconds, time, pid and id) is written, then
    the directory renamed into place. Safe with several processes calling it at once: the first
    takes the lock and builds, the others wait on the lock and then find the finished install."""
    if is_complete(target):
        return target  # the common case: no lock, no installer
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f"{target.name}.lock", what):
        if is_complete(target):
            return target  # another worker finished it while we waited
        if target.exists():  # not ours to trust: a directory put there by hand, or a damaged one
            trash = root / f".trash-{uuid.uuid4().hex}"
            os.rename(target, trash)
            shutil.rmtree(trash, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=root))
        try:
            started = time.monotonic()
            marker = build(tmp)
            marker.update(install_seconds=round(time.monotonic() - started, 3), pid=os.getpid(),
                          installed_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), install_id=uuid.uuid4().hex)
            (tmp / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
            os.rename(tmp, target)  # atomic on one filesystem; target does not exist (checked under the lock)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return target


@contextmanager
def locked(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive fcntl lock on ``path``; give up loudly after LOCK_TIMEOUT_S."""
    with open(path, "a+") as fh:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RealClientSetupError(f"timed out after {LOCK_TIMEOUT_S:.0f}s waiting for {path} "
                                               f"(another process installing {what} is stuck?)") from None
                time.sleep(0.1)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")  # who holds it, for a person looking at a stuck run
            fh.flush()
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def run_installer(cmd: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    """Run one step of an install and return its stdout; any failure is a RealClientSetupError with
    the command and the tails of its stderr and stdout."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired as exc:
        raise RealClientSetupError(f"{what} timed out after {INSTALL_TIMEOUT_S:.0f}s\n"
                                   f"command: {' '.join(cmd)}\nstderr tail:\n{tail(exc.stderr)}") from None
    except OSError as exc:
        raise RealClientSetupError(f"cannot run {what}: {exc}\ncommand: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        raise RealClientSetupError(f"{what} failed (exit {proc.returncode})\ncommand: {' '.join(cmd)}\n"
                                   f"stderr tail:\n{tail(proc.stderr)}\nstdout tail:\n{tail(proc.stdout)}")
    return proc.stdout


def tail(text: str | bytes | None, lines: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])


def version(cmd: list[str]) -> str:
    """A tool's ``--version`` answer, "unknown" if it has none."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
