"""What every test process shares.

Python caches each module's bytecode in ``__pycache__`` unless ``PYTHONDONTWRITEBYTECODE`` is set,
as it is on some machines and CI images. The suite starts thousands of Python processes (nodes,
``rmqemu`` commands, Spark's Python workers); with the variable set, each one compiled every
module it imported from source, again and again (bench/README.md has the cost). The suite's own
processes, and all they start, cache bytecode as Python does by default.

The suite starts a Spark JVM in about twenty processes: they share a class-data archive
(``RMQEMU_SPARK_CDS``, reports/jvm_archive.py) in the cache the real-client installs use, so
every JVM start but the first few maps it instead of loading Spark's classes afresh.

Hypothesis runs every property test derandomized (profile ``deterministic``): each run, here
and in CI, draws the same examples, so the suite passes or fails on the code alone. Exploring
for new counterexamples is a run of its own, ``--hypothesis-profile=explore`` (docs/testing.md).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.realclients.cache import cache_root

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
os.environ.setdefault("RMQEMU_SPARK_CDS", str(cache_root("RMQEMU_SPARK_CDS", "spark-cds")))

# loaded before any test module is imported, so every @settings inherits the profile's
# derandomize; --hypothesis-profile (hypothesis' pytest plugin) replaces it later still
_PROFILE = dict(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deterministic", derandomize=True, database=None, **_PROFILE)
settings.register_profile("explore", derandomize=False, **_PROFILE)
settings.load_profile("deterministic")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups into the ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (pyproject.toml): a file's tests run on one worker, as with
    ``loadfile``, and every file that uses the per-worker Spark session (``rmqemu_spark``) on the
    same worker, so the suite starts that session's JVM once rather than once per worker."""
    spark_files = {item.path for item in items if "rmqemu_spark" in getattr(item, "fixturenames", ())}
    for item in items:
        group = "spark-session" if item.path in spark_files else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))



def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Stop the run when ``--dist loadgroup`` lost the groups, before any test runs.

    Every test carries a group (above), which pytest-xdist's worker appends to its id as
    ``@group``. Where pytest no longer lets it (pytest 9.2 with pytest-xdist 3.8, pytest-xdist
    #1386), every group is spread over the workers without a word, and each worker starts a
    Spark JVM of its own."""
    if node.config.getvalue("dist") != "loadgroup":
        return
    lost = [nodeid for nodeid in ids if nodeid.rfind("@") < nodeid.rfind("]") or "@" not in nodeid]
    if lost:
        pytest.exit(
            f"--dist loadgroup lost its groups ({len(lost)} of {len(ids)} tests, e.g. {lost[0]}): "
            f"pytest {pytest.__version__} cannot take a group in a test id (pytest-xdist #1386); "
            "install the pytest that pyproject.toml asks for", returncode=pytest.ExitCode.USAGE_ERROR)
