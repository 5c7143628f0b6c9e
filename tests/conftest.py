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


SPARK_GROUP = "spark-session"


def _rank(item: pytest.Item, group: str) -> int:
    """Which groups the workers take first: the longest first, so none is left running alone at
    the end. The Spark session's files (the longest group by far), then the real clients (each
    waits out a client's 30 s route poll), then whatever starts processes or a JVM, then the
    rest, quick tests that fill the gaps."""
    if group == SPARK_GROUP:
        return 0
    if "realclients" in item.path.parts:
        return 1
    marks = {m.name for m in item.iter_markers()}  # tests/integration's own mark comes later: its path
    return 2 if "integration" in item.path.parts or marks & {"integration", "spark"} else 3


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups into the ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (pyproject.toml): a file's tests run on one worker, as with
    ``loadfile``, and every file that uses the per-worker Spark session (``rmqemu_spark``) on the
    same worker, so the suite starts that session's JVM once rather than once per worker. The
    groups go out in :func:`_rank`'s order (``--no-loadscope-reorder`` keeps it: xdist's own
    order, most tests first, left the one-test real-client files, the longest, for the end)."""
    spark_files = {item.path for item in items if "rmqemu_spark" in getattr(item, "fixturenames", ())}
    ranks = {}
    for item in items:
        group = SPARK_GROUP if item.path in spark_files else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))
        ranks[item.nodeid] = _rank(item, group)
    items.sort(key=lambda item: ranks[item.nodeid])  # stable: a file's tests stay together, in order



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
