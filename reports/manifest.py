"""A run's ``manifest.json``: the parts the report needs, validated with errors that name the
file (docs/design.md §1). Kept apart from the event logs' reader so the CLI can check a run
directory before any Spark session exists."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rmqemu.errors import RunInputError

if TYPE_CHECKING:  # Spark only reads a remote manifest: the rest of the report works without it
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Manifest:
    """The parts of ``manifest.json`` the report needs; unknown keys are kept in ``raw``."""

    run: str
    name: str
    scale: float
    seed: Any
    started_ms: float | None
    duration_s: float | None
    nodes: dict[str, dict[str, Any]]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


def is_uri(path: str) -> bool:
    """Whether ``path`` is a URI (``scheme://...``) rather than a local path."""
    return "://" in path


def parse_manifest(text: str, path: str, default_run: str) -> Manifest:
    """Validate the manifest JSON text; raise :class:`RunInputError` naming ``path``."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunInputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise RunInputError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    scale = raw.get("scale")
    if scale is None:
        scale = ((raw.get("topology") or {}).get("timing") or {}).get("scale")
    if scale is None:
        raise RunInputError(f"{path}: missing 'scale' (timing.scale of the run)")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
        raise RunInputError(f"{path}: 'scale' must be a number > 0, got {scale!r}")
    nodes = raw.get("nodes", {})
    if not isinstance(nodes, dict) or not all(isinstance(v, dict) for v in nodes.values()):
        raise RunInputError(f"{path}: 'nodes' must map node names to objects")
    for key in ("started_ms", "duration_s"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise RunInputError(f"{path}: '{key}' must be a number, got {value!r}")
    return Manifest(
        run=str(raw.get("run") or default_run),
        name=str(raw.get("name") or ""),
        scale=float(scale),
        seed=raw.get("seed"),
        started_ms=raw.get("started_ms"),
        duration_s=raw.get("duration_s"),
        nodes=nodes,
        raw=raw,
    )


def read_manifest(spark: SparkSession | None, run_dir: str) -> Manifest:
    """Read ``RUN_DIR/manifest.json`` (a local path, or any URI Spark reads)."""
    path = run_dir.rstrip("/") + "/manifest.json"
    default_run = os.path.basename(run_dir.rstrip("/"))
    if is_uri(run_dir) and not run_dir.startswith("file://"):
        if spark is None:
            raise RunInputError(f"{path}: a remote run dir needs a Spark session")
        try:
            rows = spark.read.text(path, wholetext=True).collect()
        except Exception as exc:  # noqa: BLE001 - AnalysisException or any filesystem's error: all mean unreadable
            raise RunInputError(f"{path}: cannot read ({type(exc).__name__})") from None
        return parse_manifest(rows[0][0] if rows else "", path, default_run)
    local = path[len("file://"):] if path.startswith("file://") else path
    if not os.path.isdir(os.path.dirname(local)):
        raise RunInputError(f"{os.path.dirname(local)}: run directory does not exist")
    if not os.path.isfile(local):
        raise RunInputError(f"{local}: missing (every run dir has a manifest.json)")
    with open(local, encoding="utf-8") as fh:
        return parse_manifest(fh.read(), local, default_run)
