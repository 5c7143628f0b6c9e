"""The README's main job, run again and again: does it keep its own timing healthy, and how soon
after the run is its report written?

    .venv/bin/python bench/main_job.py [--runs 10] [--tree DIR] [--no-report]

Each run is ``rmqemu launch topologies/chaos-quickstart.yaml --report --no-progress`` as a user
types it (a subprocess; runs under a temporary ``--root``). Per run it prints:
- ``warnings``: the launch's live timing warnings ("the host is falling behind", docs/design.md §9);
- ``healthy`` and ``p99``: the report's timing verdict and the worst node's lateness (metrics.json);
- ``report after run``: wall seconds from the run's directory line on stdout (every node stopped)
  to the report.html line (the report written), i.e. what the user waits for once the run ends;
- the exit code (0: every expectation held).
``--tree`` picks the checkout to run, with its ``.venv``, so another tree can be measured beside
this one; the launch runs from it (a node started with ``python -m`` imports the working
directory's ``rmqemu/`` first). ``--no-report`` runs the
same job without ``--report`` (its warnings only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARNING = "the host is falling behind"


def one_run(tree: Path, root: Path, report: bool = True) -> dict[str, object]:
    t0 = time.monotonic()
    proc = subprocess.Popen([str(tree / ".venv" / "bin" / "rmqemu"), "launch", "topologies/chaos-quickstart.yaml",
                             *(["--report"] if report else []), "--no-progress", "--root", str(root)],
                            cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    seen: list[tuple[float, str]] = [(time.monotonic(), line.rstrip("\n")) for line in proc.stdout]
    err = proc.stderr.read()
    code = proc.wait()
    end = time.monotonic()
    run_dir = Path(seen[0][1]) if seen else None
    html = [t for t, line in seen if line.endswith("report.html")]
    timing: dict[str, object] = {}
    if run_dir is not None and (run_dir / "report" / "metrics.json").exists():
        timing = json.loads((run_dir / "report" / "metrics.json").read_text()).get("timing", {})
    return {
        "code": code,
        "warnings": sum(WARNING in line for line in err.splitlines()),
        "healthy": timing.get("healthy"),
        "p99_ms": timing.get("lag_p99_ms"),
        "worst": timing.get("worst_node"),
        "run_s": round(seen[0][0] - t0, 2) if seen else None,
        "report_after_run_s": round(html[0] - seen[0][0], 2) if html and seen else None,
        "exit_after_run_s": round(end - seen[0][0], 2) if seen else None,
        "stderr_tail": err[-400:] if code not in (0, 1) else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--tree", type=Path, default=ROOT, help="a checkout with its .venv (default: this one)")
    ap.add_argument("--no-report", dest="report", action="store_false")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rmqemu-main-job-") as tmp:
        for i in range(args.runs):
            row = one_run(args.tree.resolve(), Path(tmp) / f"r{i}", args.report)
            rows.append(row)
            print(json.dumps({"run": i, **row}), flush=True)
    warned = sum(1 for r in rows if r["warnings"])
    unhealthy = sum(1 for r in rows if r["healthy"] is False)
    after = [r["report_after_run_s"] for r in rows if isinstance(r["report_after_run_s"], float)]
    written = (f"report written {min(after):.1f} / {statistics.median(after):.1f} / {max(after):.1f} s "
               "(min / median / max) after the run" if after else "no report written")
    print(f"{len(rows)} runs: {warned} with a timing warning, {unhealthy} not healthy in the report; {written}",
          flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
