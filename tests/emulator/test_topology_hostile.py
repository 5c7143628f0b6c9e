"""Hostile topology files (issue 13): every one is refused by `validate` with exit 2, one short
message naming the file, the limit and the line, no traceback, within a time and memory bound;
and a run name can never place a run directory outside ``--root``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rmqemu.emulator.launcher.limits import MAX_NODES
from rmqemu.emulator.launcher.run_dir import new_run_dir
from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.emulator.launcher.topology_yaml import MAX_DEPTH, MAX_FILE_BYTES
from rmqemu.errors import RunDirError, TopologyError

BASE = "brokers:\n  - {name: broker-a}\n"


def _laughs(levels: int = 9) -> str:
    """The "billion laughs" alias bomb: 9 levels of 9 aliases is 9**9 (387 M) leaves."""
    lines = ["lol0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


#: file name -> (content, words the single problem line must contain)
CORPUS: dict[str, tuple[str | bytes, tuple[str, ...]]] = {
    "name-absolute.yaml": ("name: /tmp/x\n" + BASE, ("name:", "not a valid run name", "line 1")),
    "name-dotdot.yaml": ("name: ../../../r\n" + BASE, ("name:", "not a valid run name", "line 1")),
    "name-long.yaml": ("name: " + "a" * 300 + "\n" + BASE, ("not a valid run name", "1-64 chars")),
    "name-empty.yaml": ("name: ''\n" + BASE, ("not a valid run name",)),
    "name-slash.yaml": ("name: a/b\n" + BASE, ("not a valid run name",)),
    "alias-bomb.yaml": ("name: t\n" + BASE + _laughs(), ("line 4", "anchors", "not allowed")),
    "alias-in-allocate-params.yaml": (
        "name: t\n" + BASE + "consumers:\n  - group: g\n    subscribe: [T]\n    allocate_params:\n"
        + "".join("      " + line + "\n" for line in _laughs().splitlines()), ("anchors", "not allowed")),
    "alias-only.yaml": ("name: t\n" + BASE + "x: *nowhere\n", ("line 4", "aliases", "not allowed")),
    "merge-key.yaml": ("name: t\n" + BASE + "x:\n  <<: {a: 1}\n", ("merge keys",)),
    "too-many-nodes.yaml": ("name: t\nbrokers:\n" + "".join(f"  - {{name: b{i}, slaves: 8}}\n" for i in range(300)),
                            ("nodes:", f"more than the {MAX_NODES}", "(limit)")),
    "too-big.yaml": ("name: t\n" + BASE + "topics:\n" + "".join(
        f"  - {{name: T{i}, brokers: [broker-a]}}\n" for i in range(8_000)), ("larger than", str(MAX_FILE_BYTES))),
    "deep.yaml": ("name: t\nx: " + "[" * 20_000 + "]" * 20_000 + "\n", ("line 2", f"deeper than {MAX_DEPTH}")),
    "seed-4400-digits.yaml": ("name: t\nseed: " + "9" * 4400 + "\n" + BASE, ("line 2", "cannot be read")),
    "seed-4000-digits.yaml": ("name: t\nseed: " + "9" * 4000 + "\n" + BASE, ("seed: must be <=", "line 2")),
    "scale-tiny.yaml": ("name: t\ntiming: {scale: 1.0e-12}\n" + BASE, ("timing.scale: must be >= 0.001", "line 2")),
    "duplicate-key.yaml": ("name: t\n" + BASE + "name: u\n", ("line 4", "duplicate key 'name'", "first at line 1")),
    "rate-impossible.yaml": ("name: t\n" + BASE + "producers:\n  - {group: p, topics: [T], rate: 30}\n",
                             ("producers[0].rate", "messages per wall second", "(limit)", "line 5")),
    "schema-error.yaml": ("name: t\nbrokers:\n  - {name: a}\n  - name: b\n    slaves: -1\n",
                          ("brokers[1].slaves: must be >= 0, got -1", "(line 5)")),
    "remoting-port.yaml": ("name: t\n" + BASE + "remoting: {ports: {broker-a-0: 99999}}\n",
                           ("remoting.ports.broker-a-0: must be <= 65535, got 99999", "line 4")),
    "remoting-node.yaml": ("name: t\n" + BASE + "remoting:\n  ports: {pg-0: 9876}\n",
                           ("remoting.ports.pg-0: not a namesrv or broker node", "valid: namesrv-0, broker-a-0",
                            "line 5")),
    "remoting-host.yaml": ("name: t\n" + BASE + "remoting: {host: rm.example.com}\n",
                           ("remoting.host:", "not an IP address literal", "line 4")),
    "binary.yaml": (bytes(range(256)) * 4, ("not UTF-8",)),
    "latin-1.yaml": ("name: caf\xe9\n".encode("latin-1"), ("line 1", "not UTF-8", "0xe9")),
    "nul.yaml": (b"name: t\x00\n", ("NUL byte",)),
    "python-tag.yaml": ("name: !!python/object/apply:os.system [id]\n" + BASE, ("not valid YAML",)),
    "not-a-mapping.yaml": ("- 1\n", ("expected a mapping",)),
    "two-documents.yaml": ("name: t\n---\nname: u\n", ("not valid YAML",)),
}


def write(tmp_path: Path, name: str) -> Path:
    content = CORPUS[name][0]
    f = tmp_path / name
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    return f


# The CLI under 1 GiB of address space, the limit set by the child itself before rmqemu loads: no
# preexec_fn, so the child is spawned with vfork and no fork handler of a library this worker
# loaded (gRPC's can abort a forked child, grpc/grpc#43055) runs in it.
LIMITED_CLI = [sys.executable, "-c", "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
               "from rmqemu.emulator.cli.main import main; main()"]


def test_validate_refuses_each_with_one_short_message_and_exits_2(tmp_path: Path) -> None:
    """The whole corpus in one `rmqemu validate`, as a user checks a folder of topologies: each
    file is refused on its own, with a message of a few short lines naming it."""
    files = [write(tmp_path, name) for name in sorted(CORPUS)]
    out = subprocess.run([*LIMITED_CLI, "validate", *map(str, files)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    blocks: list[list[str]] = []
    for line in out.stderr.strip().splitlines():
        if line.startswith("error: "):
            blocks.append([])
        blocks[-1].append(line)
    assert len(blocks) == len(files), out.stderr
    for f, lines in zip(files, blocks, strict=True):
        text = "\n".join(lines)
        assert lines[0] == f"error: {f}: 1 problem(s)" and len(lines) <= 4, text
        assert len(text) < 800, text
        for word in CORPUS[f.name][1]:
            assert word in text, (f.name, word, text)


def test_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    """The bomb that took 600 s and 3.9 GB: refused within 1 GiB of address space and a timeout."""
    f = write(tmp_path, "alias-in-allocate-params.yaml")
    out = subprocess.run([*LIMITED_CLI, "launch", str(f), "--root", str(tmp_path / "runs")],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and "anchors" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "runs").exists()  # nothing was started


def test_line_numbers_point_at_the_key(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("name: t\ntiming:\n  scale: 0\nbrokers:\n  - name: a\n    bogus: 1\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert "timing.scale: must be >= 0.001, got 0 (line 3)" in info.value.problems
    assert any(p.startswith("brokers[0].bogus") and p.endswith("(line 6)") for p in info.value.problems)


@pytest.mark.parametrize("name", ["../escape", "/tmp/abs", "a/b", "../.."])
def test_run_dir_stays_inside_root_even_without_the_schema(tmp_path: Path, name: str) -> None:
    """The schema refuses such names; new_run_dir checks the resolved path on its own as well."""
    root = tmp_path / "root"
    with pytest.raises(RunDirError):
        new_run_dir(name, root)
    assert {p.name for p in tmp_path.iterdir()} == {"root"}
    assert not any(p for p in root.iterdir() if p.name != "latest")


def test_a_valid_name_lands_in_root(tmp_path: Path) -> None:
    run = new_run_dir("ok-name_1", tmp_path)
    assert run.resolve().parent == tmp_path.resolve() and (tmp_path / "latest").resolve() == run.resolve()


def test_too_many_yaml_values_are_refused(tmp_path: Path) -> None:
    from rmqemu.emulator.launcher.topology_yaml import MAX_YAML_NODES

    f = tmp_path / "many.yaml"
    f.write_text("name: t\n" + BASE + "x: [" + ",".join(["1"] * MAX_YAML_NODES) + "]\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert info.value.problems == [f"line 4: more than {MAX_YAML_NODES} YAML values (limit; see docs/design.md §5)"]


def test_messages_stay_short_whatever_the_file_holds(tmp_path: Path) -> None:
    """A 100 KB key and 1,000 bad entries: each line is capped, and so is their number."""
    f = tmp_path / "t.yaml"
    f.write_text("name: t\n" + BASE + "? " + "k" * 100_000 + "\n: 1\ntopics:\n"
                 + "".join(f"  - {{name: 'bad name {i}', brokers: [broker-a]}}\n" for i in range(1000)))
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    text = str(info.value)
    assert len(info.value.problems) == 1001 and all(len(p) <= TopologyError.MAX_LINE for p in info.value.problems)
    assert text.splitlines()[-1] == "  ... and 951 more" and len(text) < 20_000
