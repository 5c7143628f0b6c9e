"""ali-ons (a pure-JavaScript RocketMQ 4.x client) for the real-client tests, installed once per
machine into a cache outside the repository and shared by every pytest-xdist worker.

The cache root is ``$RMQEMU_NPM_CACHE``, else ``$XDG_CACHE_HOME/rmqemu/npm``, else
``~/.cache/rmqemu/npm``. Inside it, ``ali-ons-<version>/`` is a finished install (it appears by an
atomic rename of a temporary directory beside it, so a half-finished one is never seen),
``ali-ons-<version>.lock`` serialises installers (fcntl) and ``_npm-cache/`` is npm's own cache,
so nothing depends on ``~/.npm``. A finished install is reused without running npm.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ALI_ONS_VERSION = "3.12.0"
MARKER = "INSTALLED.json"  # written last inside the temporary directory, before the rename
INSTALL_TIMEOUT_S = 600.0
LOCK_TIMEOUT_S = INSTALL_TIMEOUT_S + 60.0  # another worker may be in the middle of an install


class RealClientSetupError(RuntimeError):
    """ali-ons or node cannot be had: the real-client tests fail (never skip) with this."""


def cache_root() -> Path:
    """Where installs live: ``$RMQEMU_NPM_CACHE`` > ``$XDG_CACHE_HOME/rmqemu/npm`` > ``~/.cache/rmqemu/npm``."""
    if os.environ.get("RMQEMU_NPM_CACHE"):
        return Path(os.environ["RMQEMU_NPM_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "rmqemu" / "npm"


def node_path() -> str:
    """The ``node`` executable, or a RealClientSetupError saying how to get one."""
    found = shutil.which("node")
    if not found:
        raise RealClientSetupError("node is not on PATH: the real-client tests run ali-ons under Node.js "
                                   "(Node 20 expected; apt-get install nodejs npm)")
    return found


def npm_path() -> str:
    """The ``npm`` executable, or a RealClientSetupError."""
    found = shutil.which("npm")
    if not found:
        raise RealClientSetupError("npm is not on PATH: needed once to install ali-ons@" + ALI_ONS_VERSION)
    return found


def install_dir(root: Path | None = None) -> Path:
    """The finished install's directory (it may not exist yet)."""
    return (root or cache_root()) / f"ali-ons-{ALI_ONS_VERSION}"


def is_complete(target: Path) -> bool:
    """True when ``target`` is a finished install of the pinned version."""
    try:
        marker = json.loads((target / MARKER).read_text())
        pkg = json.loads((target / "node_modules" / "ali-ons" / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return marker.get("version") == ALI_ONS_VERSION and pkg.get("version") == ALI_ONS_VERSION


def ali_ons_dir(root: Path | None = None) -> Path:
    """A directory whose ``node_modules`` holds ali-ons at the pinned version, installing it on first use.

    Safe with several processes calling it at once: the first takes the lock and installs, the
    others wait on the lock and then find the finished install."""
    root = root or cache_root()
    target = install_dir(root)
    if is_complete(target):
        return target  # the common case: no lock, no npm
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"ali-ons-{ALI_ONS_VERSION}.lock"):
        if is_complete(target):
            return target  # another worker finished it while we waited
        if target.exists():  # not ours to trust: a directory put there by hand, or a damaged one
            trash = root / f".trash-{uuid.uuid4().hex}"
            os.rename(target, trash)
            shutil.rmtree(trash, ignore_errors=True)
        _install(root, target)
    return target


def node_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a node script gets: ours plus ``NODE_PATH`` at the installed node_modules."""
    env = dict(os.environ)
    env["NODE_PATH"] = str(ali_ons_dir() / "node_modules")
    env.update(extra or {})
    return env


def installed_packages(target: Path) -> dict[str, str]:
    """``{package path: version}`` of everything npm put in ``node_modules`` (from its lockfile)."""
    lock = json.loads((target / "package-lock.json").read_text())
    return {name.removeprefix("node_modules/"): meta.get("version", "")
            for name, meta in lock.get("packages", {}).items() if name}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
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
                                               "(another process installing ali-ons is stuck?)") from None
                time.sleep(0.1)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")  # who holds it, for a person looking at a stuck run
            fh.flush()
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _install(root: Path, target: Path) -> None:
    """npm install into a temporary directory beside ``target``, check it, then rename it into place."""
    npm = npm_path()
    node_path()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=root))
    try:
        manifest = {"name": "rmqemu-realclients", "version": "0.0.0", "private": True,
                    "description": "ali-ons for rmqemu's real-client tests (installed by tests/realclients/alions.py)",
                    "dependencies": {"ali-ons": ALI_ONS_VERSION}}
        (tmp / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        cmd = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier",
               "--cache", str(root / "_npm-cache"), "--prefix", str(tmp)]
        started = time.monotonic()
        _run_npm(cmd, cwd=tmp)
        seconds = time.monotonic() - started
        pkg = tmp / "node_modules" / "ali-ons" / "package.json"
        version = json.loads(pkg.read_text()).get("version") if pkg.exists() else None
        if version != ALI_ONS_VERSION:
            raise RealClientSetupError(f"npm installed ali-ons {version!r}, not {ALI_ONS_VERSION}: {' '.join(cmd)}")
        marker: dict[str, Any] = {
            "package": "ali-ons", "version": ALI_ONS_VERSION, "install_seconds": round(seconds, 3),
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid(), "install_id": uuid.uuid4().hex,
            "command": cmd, "node": _version([node_path(), "--version"]), "npm": _version([npm, "--version"]),
            "packages": installed_packages(tmp),
        }
        (tmp / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
        os.rename(tmp, target)  # atomic on one filesystem; target does not exist (checked under the lock)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _run_npm(cmd: list[str], cwd: Path) -> None:
    """Run npm; any failure becomes a RealClientSetupError with the command and npm's stderr tail."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        tail = _tail(exc.stderr)
        raise RealClientSetupError(f"npm install timed out after {INSTALL_TIMEOUT_S:.0f}s\n"
                                   f"command: {' '.join(cmd)}\nstderr tail:\n{tail}") from None
    except OSError as exc:
        raise RealClientSetupError(f"cannot run npm: {exc}\ncommand: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        raise RealClientSetupError(f"npm install failed (exit {proc.returncode})\ncommand: {' '.join(cmd)}\n"
                                   f"stderr tail:\n{_tail(proc.stderr)}\nstdout tail:\n{_tail(proc.stdout)}")


def _tail(text: str | bytes | None, lines: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])


def _version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
