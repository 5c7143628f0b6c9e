"""Where warm ``reports.job.metrics()`` of a recorded run spends its time.

    .venv/bin/python bench/metrics_profile.py RUN_DIR [--repeat 4] [--cprofile 30] [--out m.json]
        [--code DIR]

Builds the session the pytest plugin builds (``local[2]``, small-input settings,
``emulator.testing.TEST_SPARK_CONF``), calls ``metrics(spark, RUN_DIR)`` ``--repeat``
times and prints per call: wall seconds, Spark jobs and stages started (the status
tracker), py4j commands sent (every Python -> JVM call: building a DataFrame is dozens),
and the load average. The first call is cold (JIT, class loading); the median of the
others is the warm figure. ``--cprofile N`` profiles the last call (driver Python, py4j
waits included) and prints its top ``N`` functions by cumulative time. ``--out`` writes
the last call's document (to compare code versions: ``--code DIR`` imports ``reports``
from another checkout, e.g. main's, so both run on the same recorded run).

A benchmark, not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Py4jCounter:
    """Counts the commands the driver sends to the JVM (py4j's ``send_command``)."""

    def __init__(self) -> None:
        self.n = 0
        from py4j import clientserver, java_gateway

        for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            orig = cls.send_command

            def counted(conn: Any, command: str, *args: Any, _orig: Any = orig, **kwargs: Any) -> Any:
                self.n += 1
                return _orig(conn, command, *args, **kwargs)

            cls.send_command = counted  # type: ignore[method-assign]


def _ids(spark: Any) -> tuple[int, int]:
    """How many jobs and stages the session has run so far (the status tracker keeps
    recent ones; a metrics call runs a few, far below its retention limit)."""
    tr = spark.sparkContext.statusTracker()
    jobs = tr.getJobIdsForGroup(None)
    stages = set()
    for j in jobs:
        info = tr.getJobInfo(j)
        if info is not None:
            stages.update(info.stageIds)
    return len(jobs), len(stages)


def _stage_totals(spark: Any, since: set[int]) -> tuple[set[int], dict[str, float]]:
    """Seconds the stages not in ``since`` spent, from the driver's status store: task run
    time (executing operators), task deserialization, and the stages' own wall time summed
    (submission to completion: scheduling included)."""
    got = {"run": 0.0, "deserialize": 0.0}
    seen = set(since)
    sc = spark.sparkContext
    empty = sc._jvm.java.util.ArrayList()  # no status filter: every stage
    stages = sc._jsc.sc().statusStore().stageList(empty, False, False, sc._gateway.new_array(sc._jvm.double, 0), empty)
    for i in range(stages.size()):
        sd = stages.apply(i)  # a Scala Seq
        if sd.stageId() in seen:
            continue
        seen.add(sd.stageId())
        got["run"] += sd.executorRunTime() / 1000.0
        got["deserialize"] += sd.executorDeserializeTime() / 1000.0
    return seen, got


def _cpu(jvm_pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) used so far by this Python process and by the JVM:
    steadier than wall time on a host other work shares."""
    with open(f"/proc/{jvm_pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return sum(os.times()[:2]), (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--cprofile", type=int, default=0, metavar="N", help="profile the last call, print top N")
    ap.add_argument("--out", help="write the last call's metrics document here")
    ap.add_argument("--code", default=str(ROOT), help="checkout whose reports/ is measured")
    ap.add_argument("--workers", type=int, default=None, help="threads (default: the job's)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a session setting, applied after the plugin's (to try settings)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from emulator.testing import TEST_SPARK_CONF
    sys.path.insert(0, a.code)
    for name in [m for m in sys.modules if m == "reports" or m.startswith("reports.")]:
        del sys.modules[name]
    from reports.job import metrics
    from reports.session import build_session, stop_session
    import reports.job

    print(f"reports from {Path(reports.job.__file__).parents[1]}")
    counter = Py4jCounter()
    t = time.perf_counter()
    spark = build_session("local[2]", small_input=True, conf={**TEST_SPARK_CONF, **dict(kv.partition("=")[::2] for kv in a.conf)})
    print(f"session start: {time.perf_counter() - t:.1f} s", flush=True)
    kw = {} if a.workers is None else {"workers": a.workers}
    pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    seen: set[int] = set()
    walls, doc = [], None
    try:
        for i in range(a.repeat):
            prof = cProfile.Profile() if a.cprofile and i == a.repeat - 1 else None
            (j0, s0), c0, (py0, jvm0), t0 = _ids(spark), counter.n, _cpu(pid), time.perf_counter()
            if prof:
                prof.enable()
            doc = metrics(spark, a.run_dir, **kw)
            if prof:
                prof.disable()
            took = time.perf_counter() - t0
            (j1, s1), c1, (py1, jvm1) = _ids(spark), counter.n, _cpu(pid)
            seen, st = _stage_totals(spark, seen)
            walls.append(took)
            print(f"call {i + 1}: {took:.2f} s wall, CPU {py1 - py0:.2f} s Python + {jvm1 - jvm0:.2f} s JVM; "
                  f"{j1 - j0} jobs, {s1 - s0} stages (tasks ran {st['run']:.2f} s, deserialized "
                  f"{st['deserialize']:.2f} s); {c1 - c0} py4j "
                  f"commands; load average {os.getloadavg()[0]:.1f}", flush=True)
            if prof:
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(a.cprofile)
                print(out.getvalue())
    finally:
        stop_session(spark)
    if len(walls) > 1:
        print(f"warm metrics(): median {statistics.median(walls[1:]):.2f} s over {len(walls) - 1} call(s)")
    if a.out and doc is not None:
        Path(a.out).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
