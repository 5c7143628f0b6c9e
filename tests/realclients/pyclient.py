"""The Apache RocketMQ C++ client (rocketmq-client-cpp 2.x) for the real-client tests: PyPI's
``rocketmq-python-cvs`` sdist bundles a build of it (``rocketmq/librocketmq.so``) with its ctypes
binding (``rocketmq.client``). Installed once per machine into a venv of its own in a cache
outside the repository, shared by every pytest-xdist worker (:mod:`tests.realclients.cache`):
never into the project's venv, since the sdist also installs a top-level ``samples`` package.

The cache root is ``$RMQEMU_PYCLIENT_CACHE``, else ``$XDG_CACHE_HOME/rmqemu/pyclient``, else
``~/.cache/rmqemu/pyclient``. Inside it, ``rocketmq-python-cvs-<version>/`` is a finished venv
(made by ``python -m venv --without-pip`` in a temporary directory, the package installed into it
by the running interpreter's pip, ``pip --python``, pip 22.3 or later; then renamed: its
``bin/python`` finds its site-packages from where it stands) and ``_pip-cache/`` is pip's own
cache.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.realclients import cache
from tests.realclients.cache import RealClientSetupError

PACKAGE, VERSION = "rocketmq-python-cvs", "2.1.0.3"
#: What the installed client must load: the binding imports the bundled library at import time.
PROBE = ("import json, os, rocketmq.client as c, rocketmq.ffi as f; "
         "print(json.dumps({'library': f._DYLIB_PATH, 'exports': sorted(c.__all__)}))")


def cache_root() -> Path:
    """``$RMQEMU_PYCLIENT_CACHE`` > ``$XDG_CACHE_HOME/rmqemu/pyclient`` > ``~/.cache/rmqemu/pyclient``."""
    return cache.cache_root("RMQEMU_PYCLIENT_CACHE", "pyclient")


def install_dir(root: Path | None = None) -> Path:
    """The finished venv's directory (it may not exist yet)."""
    return (root or cache_root()) / f"{PACKAGE}-{VERSION}"


def is_complete(target: Path) -> bool:
    """True when ``target`` is a finished install of the pinned version."""
    marker = cache.read_marker(target)
    return marker.get("version") == VERSION and (target / "bin" / "python").exists()


def python(root: Path | None = None) -> Path:
    """The Python of a venv holding the C++ client at the pinned version, installing it on first use."""
    target = install_dir(root)
    return cache.install_once(target, is_complete, lambda tmp: _install(target.parent, tmp),
                              f"{PACKAGE}=={VERSION}") / "bin" / "python"


def _install(root: Path, tmp: Path) -> dict[str, Any]:
    """A venv in ``tmp`` with the package, checked by loading the library; the marker's fields."""
    venv = [sys.executable, "-m", "venv", "--without-pip", str(tmp)]
    cache.run_installer(venv, root, "python -m venv")
    pip = [sys.executable, "-m", "pip", "--python", str(tmp / "bin" / "python"), "install", "--no-input",
           "--disable-pip-version-check", "--cache-dir", str(root / "_pip-cache"), f"{PACKAGE}=={VERSION}"]
    cache.run_installer(pip, root, "pip install")
    probe = [str(tmp / "bin" / "python"), "-c", PROBE]
    try:
        loaded = json.loads(cache.run_installer(probe, tmp, "loading the C++ client").strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RealClientSetupError(f"the C++ client's probe printed no JSON: {' '.join(probe)}") from exc
    if "PushConsumer" not in loaded["exports"]:
        raise RealClientSetupError(f"{PACKAGE}=={VERSION} has no PushConsumer: {loaded}")
    return {"package": PACKAGE, "version": VERSION, "commands": [venv, pip], "python": cache.version(
        [str(tmp / "bin" / "python"), "--version"]), "library": Path(loaded["library"]).name}
