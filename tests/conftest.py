"""What every test process shares.

Python caches each module's bytecode in ``__pycache__`` unless ``PYTHONDONTWRITEBYTECODE`` is set,
as it is on some machines and CI images. The suite starts thousands of Python processes (nodes,
``rmqemu`` commands, Spark's Python workers); with the variable set, each one compiled every
module it imported from source, again and again (bench/README.md has the cost). The suite's own
processes, and all they start, cache bytecode as Python does by default.
"""

from __future__ import annotations

import os
import sys

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
