"""The CLI without PySpark installed (`report` explains what to install, `launch --report` refuses
before starting anything), and its version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WITHOUT_PYSPARK = "import sys; sys.modules['pyspark'] = None; from rmqemu.emulator.cli.main import main; main()"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_PYSPARK, *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_report_without_pyspark_says_what_to_install(tmp_path: Path) -> None:
    out = run("report", "runs/latest", cwd=tmp_path)
    assert out.returncode == 2 and "pip install 'rmqemu[spark]'" in out.stderr


def test_launch_report_without_pyspark_refuses_before_spawning(tmp_path: Path) -> None:
    topo = Path(__file__).resolve().parents[2] / "topologies" / "quickstart.yaml"
    out = run("launch", str(topo), "--report", "--root", str(tmp_path / "runs"), cwd=tmp_path)
    assert out.returncode == 2 and "--report needs PySpark" in out.stderr
    assert not (tmp_path / "runs").exists()  # no run started


def test_the_cli_does_not_import_pyspark_until_a_report_is_made(tmp_path: Path) -> None:
    """`rmqemu --help`, `down`, `validate` need no Spark: importing it costs a third of a second."""
    probe = "import sys; import rmqemu.emulator.cli.main; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_version_is_the_installed_distributions(tmp_path: Path) -> None:
    from importlib.metadata import version

    script = Path(sys.executable).with_name("rmqemu")
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"rmqemu {version('rmqemu')}"
