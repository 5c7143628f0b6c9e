"""ali-ons (a pure-JavaScript RocketMQ 4.x client) for the real-client tests, installed once per
machine into a cache outside the repository and shared by every pytest-xdist worker
(:mod:`tests.realclients.cache`: atomic rename, fcntl lock, a marker written last).

The cache root is ``$RMQEMU_NPM_CACHE``, else ``$XDG_CACHE_HOME/rmqemu/npm``, else
``~/.cache/rmqemu/npm``. Inside it, ``ali-ons-<version>/`` is a finished install,
``ali-ons-<version>.lock`` serialises installers and ``_npm-cache/`` is npm's own cache, so
nothing depends on ``~/.npm``. A finished install is reused without running npm.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.realclients import cache
from tests.realclients.cache import LOCK_TIMEOUT_S, MARKER, RealClientSetupError

__all__ = ["ALI_ONS_VERSION", "LOCK_TIMEOUT_S", "MARKER", "RealClientSetupError", "ali_ons_dir", "cache_root",
           "install_dir", "installed_packages", "is_complete", "node_env", "node_path", "npm_path"]

ALI_ONS_VERSION = "3.12.0"


def cache_root() -> Path:
    """Where installs live: ``$RMQEMU_NPM_CACHE`` > ``$XDG_CACHE_HOME/rmqemu/npm`` > ``~/.cache/rmqemu/npm``."""
    return cache.cache_root("RMQEMU_NPM_CACHE", "npm")


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
        pkg = json.loads((target / "node_modules" / "ali-ons" / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return cache.read_marker(target).get("version") == ALI_ONS_VERSION and pkg.get("version") == ALI_ONS_VERSION


def ali_ons_dir(root: Path | None = None) -> Path:
    """A directory whose ``node_modules`` holds ali-ons at the pinned version, installing it on first use."""
    target = install_dir(root)
    return cache.install_once(target, is_complete, lambda tmp: _install(target.parent, tmp), "ali-ons")


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


def _install(root: Path, tmp: Path) -> dict[str, Any]:
    """npm install into ``tmp`` and check it; the marker's fields."""
    npm = npm_path()
    node_path()
    manifest = {"name": "rmqemu-realclients", "version": "0.0.0", "private": True,
                "description": "ali-ons for rmqemu's real-client tests (installed by tests/realclients/alions.py)",
                "dependencies": {"ali-ons": ALI_ONS_VERSION}}
    (tmp / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    cmd = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier",
           "--cache", str(root / "_npm-cache"), "--prefix", str(tmp)]
    cache.run_installer(cmd, tmp, "npm install")
    pkg = tmp / "node_modules" / "ali-ons" / "package.json"
    version = json.loads(pkg.read_text()).get("version") if pkg.exists() else None
    if version != ALI_ONS_VERSION:
        raise RealClientSetupError(f"npm installed ali-ons {version!r}, not {ALI_ONS_VERSION}: {' '.join(cmd)}")
    return {"package": "ali-ons", "version": ALI_ONS_VERSION, "command": cmd,
            "node": cache.version([node_path(), "--version"]), "npm": cache.version([npm, "--version"]),
            "packages": installed_packages(tmp)}
