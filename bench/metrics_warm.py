"""What ``metrics()`` of a small run costs in a test: cold (a JVM start) and on a warm session.

    .venv/bin/python bench/metrics_warm.py [--runs 3] [--only consumption.lost,sends.ok,...]

Launches the quickstart topology for 60 cluster s (0.6 wall s at scale 0.01) a few times through
``emulator.Cluster`` and times ``cluster.metrics(spark)``: the first on a session built just
before (what a test pays when it is the first of its worker to ask), the others on the same
session, warm (what the pytest plugin's ``rmqemu_spark`` gives every later test). The goal from
the pytest-API issue: at most about 3 s warm. ``--only`` times ``metrics(spark, only=...)``
(comma-separated sections or paths: what a test asserting a few metrics asks for) on each run
right after the whole document, both warm. Nothing asserts; it prints one line per run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import emulator  # noqa: E402
from emulator.testing import TEST_SPARK_CONF  # noqa: E402
from reports.session import build_session, stop_session  # noqa: E402

TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies" / "quickstart.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="also time metrics(only=...) of these sections or paths")
    args = parser.parse_args()
    only = [p for p in args.only.split(",") if p]
    t0 = time.perf_counter()
    spark = build_session("local[2]", small_input=True, conf=TEST_SPARK_CONF)
    start_s = time.perf_counter() - t0
    print(f"session start: {start_s:.1f} s")
    warm, warm_only = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="rmqemu-metrics-warm-") as tmp:
            for i in range(args.runs):
                with emulator.Cluster(TOPOLOGY, run_dir=Path(tmp) / f"run-{i}") as c:
                    c.wait_routed("OrderTopic")
                    c.sleep("60s")
                    c.finish()
                    t = time.perf_counter()
                    m = c.metrics(spark)
                    took = time.perf_counter() - t
                    if only:  # a fresh Cluster object would not reuse the document: ask reports directly
                        from reports.job import metrics as run_metrics
                        t = time.perf_counter()
                        run_metrics(spark, str(c.run_dir), only=only)
                        took_only = time.perf_counter() - t
                state = "first on this session" if i == 0 else "warm"
                print(f"run {i}: {m['events']} events, metrics() {took:.2f} s ({state})"
                      + (f"; only={','.join(only)}: {took_only:.2f} s" if only else ""))
                if i:
                    warm.append(took)
                    if only:
                        warm_only.append(took_only)
    finally:
        stop_session(spark)
    if warm:
        print(f"warm metrics(): median {statistics.median(warm):.2f} s over {len(warm)} run(s)")
    if warm_only:
        print(f"warm metrics(only={','.join(only)}): median {statistics.median(warm_only):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
