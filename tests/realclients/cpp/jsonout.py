"""What the C++ client scripts beside this file print with: one JSON object a line on stdout, whole,
from any thread (the client calls listeners and callbacks on threads of its own), and the wall clock
in ms. The scripts run under the client's own venv (tests/realclients/pyclient.py) with their folder
first on ``sys.path``; this file imports only the standard library."""
from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

_out = threading.Lock()


def emit(obj: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed at once."""
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _out:
        sys.stdout.write(line)
        sys.stdout.flush()


def now_ms() -> float:
    return round(time.time() * 1000.0, 3)
