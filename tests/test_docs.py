"""The repository stands alone: what the code cites is in its own docs/, and every section cited
exists there (a renumbered heading would otherwise leave citations pointing nowhere)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"docs/(design|rocketmq-model)\.md §(\d+(?:\.\d+)?)((?:, §\d+(?:\.\d+)?)*)")
OUTSIDE = re.compile(r"\.\./shared|shared/reference|rocketmq-4\.9-facts\.md|DESIGN section|\b[Ff]acts \d")


def tracked_files() -> list[Path]:
    """The files git tracks (what a clone holds); every text file when this is not a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        paths = [ROOT / line for line in out.splitlines()]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in ROOT.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts]
    return [p for p in paths if p.is_file() and p.suffix in {".py", ".md", ".yaml", ".toml", ".txt", ""}]


def headings(doc: str) -> set[str]:
    """``{"1", "1.1", ...}`` from ``## 1. Title`` / ``### 1.1 Title`` headings."""
    text = (ROOT / "docs" / f"{doc}.md").read_text()
    return set(re.findall(r"^#{2,4} (\d+(?:\.\d+)?)\.?\s", text, re.M))


def test_no_tracked_file_points_outside_the_repository() -> None:
    files = tracked_files()
    assert len(files) > 100, "the tracked files were not found"
    offenders = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
                 for path in files if path.name != "test_docs.py"
                 for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1) if OUTSIDE.search(line)]
    assert offenders == []


def test_every_cited_section_exists() -> None:
    sections = {"design": headings("design"), "rocketmq-model": headings("rocketmq-model")}
    assert {"1", "7", "9"} <= sections["design"] and {"1.1", "2.1", "4.8"} <= sections["rocketmq-model"]
    cited = 0
    missing = []
    for path in tracked_files():
        for match in CITATION.finditer(path.read_text(errors="replace")):
            doc, first, more = match.groups()
            for section in [first, *re.findall(r"§(\d+(?:\.\d+)?)", more)]:
                cited += 1
                if section not in sections[doc]:
                    missing.append(f"{path.relative_to(ROOT)}: docs/{doc}.md §{section}")
    assert cited > 100, "the citations were not found"
    assert missing == []


#: A repository path as code and docs name one: a top-level folder, then a path (a glob is
#: matched; a ``<placeholder>`` part makes it a path of a run or a sweep, not of the repository).
REPO_PATH = re.compile(r"(?<![\w./<-])((?:emulator|faults|reports|rmqemu|tests|docs|bench|topologies|\.ci)/"
                       r"(?:[\w./*-]|<[^>]*>)*[\w*>/])")


def _exists(ref: str) -> bool:
    """``ref`` names something in the repository: a file or folder, a glob that matches, or an
    installed module's path (under ``rmqemu/``, the folder of the same name at the top)."""
    if "<" in ref:
        return True
    for cand in (ref, ref.replace("rmqemu/", "", 1)):
        if "*" in cand:
            if any(ROOT.glob(cand)):
                return True
        elif (ROOT / cand).exists():
            return True
    return False


def test_every_repository_path_named_exists() -> None:
    """A path in a docstring, comment or doc points at something a reader can open."""
    named, missing = 0, []
    for path in tracked_files():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in REPO_PATH.finditer(line):
                named += 1
                if not _exists(match.group(1).rstrip(".")):
                    missing.append(f"{path.relative_to(ROOT)}:{n}: {match.group(1)}")
    assert named > 200, "the paths were not found"
    assert missing == []


def test_metrics_doc_is_the_registry() -> None:
    """docs/metrics.md is generated from rmqemu/metric_paths.py (`python -m rmqemu.metric_doc`)."""
    from rmqemu.metric_doc import markdown

    assert (ROOT / "docs" / "metrics.md").read_text() == markdown(), \
        "regenerate: .venv/bin/python -m rmqemu.metric_paths > docs/metrics.md"
