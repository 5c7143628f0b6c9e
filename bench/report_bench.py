"""Benchmark: events/s of ``rmqemu report``'s computation (Spark) vs the same in DuckDB.

    .venv/bin/python bench/report_bench.py [--events 1000000] [--dir /tmp/rmqemu-bench-1M] [--full]

Generates a synthetic run (``bench/gen_events.py``, seeded) unless ``--dir`` already holds
one with that many events, then on the same files and in the same process:

* Spark: ``reports.job.metrics`` (the tasks reading the files, the whole analysis,
  metrics.json assembly) on a session built like the CLI's (``local[*]``), timed after
  session start-up, which is reported apart; run twice (cold JVM, then warm).
  ``--full`` also times the whole ``run_report`` (plots, Parquet, HTML).
* DuckDB: ``bench/duck.py`` (the same definitions in SQL) on the same JSONL files.

It prints events/s for both and the ratio, and checks that both engines agree on the
headline numbers (staleness per view, convergence per fault, misrouted sends by reason,
send outcomes, lost messages); a disagreement exits 1.

Figures: bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import duck  # noqa: E402
import duckdb  # noqa: E402
import gen_events  # noqa: E402

from rmqemu.reports.job import metrics as run_metrics  # noqa: E402
from rmqemu.reports.job import run_report  # noqa: E402
from rmqemu.reports.rundir import event_paths  # noqa: E402
from rmqemu.reports.session import THREADS, build_session, stop_session  # noqa: E402


def spark_headline(m: dict) -> dict:
    """The numbers DuckDB computes too, from a metrics.json document."""
    st = [("client", r["client"], r["topic"], r["stale_ms"], r["stale_over_ms"], r["stale_under_ms"], r["intervals"],
           r["max_ms"]) for r in m["staleness"]["clients"]]
    st += [("namesrv", r["namesrv"], r["topic"], r["stale_ms"], r["stale_over_ms"], r["stale_under_ms"],
            r["intervals"], r["max_ms"]) for r in m["staleness"]["namesrvs"]]
    s = m["sends"]
    return {"staleness": sorted(st),
            "convergence": sorted((f["fault_id"], f["converged_ms"]) for f in m["staleness"]["faults"]),
            "misrouted": {k: v for k, v in m["misrouted"]["by_reason"].items() if v},
            "sends": (s["attempts"], s["ok"], s["failed"], s["no_route"], s["latency"]["all"]["p50_ms"],
                      s["latency"]["all"]["p99_ms"]),
            "lost": m["consumption"]["lost"], "events": m["events"]}


def duck_headline(r: dict) -> dict:
    st = sorted(tuple(x if x is not None else (0 if i == 6 else 0.0) for i, x in enumerate(row))
                for row in r["staleness"])
    return {"staleness": st, "convergence": sorted(r["convergence"]), "misrouted": r["misrouted"],
            "sends": tuple(r["sends"]), "lost": r["lost"], "events": r["events"]}


def close(a: object, b: object) -> bool:
    """Equal, floats within 1e-6 relative (sums in a different order)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    return a == b


def ensure_run(path: Path, events: int, seed: int) -> dict:
    stamp = path / "bench.json"
    if stamp.is_file():
        info = json.loads(stamp.read_text())
        if info.get("target") == events and info.get("seed") == seed:
            return info
    t = time.perf_counter()
    stats = gen_events.generate(path, events, seed)
    info = {"target": events, "seed": seed, **stats, "gen_s": time.perf_counter() - t}
    stamp.write_text(json.dumps(info))
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dir", type=Path, default=None, help="run dir to (re)use (default /tmp/rmqemu-bench-<N>)")
    ap.add_argument("--full", action="store_true", help="also time the whole report (plots, Parquet, HTML)")
    ap.add_argument("--threads", type=int, default=THREADS,
                    help="threads drawing and writing, as `rmqemu report --threads`")
    a = ap.parse_args()
    run = a.dir or Path(tempfile.gettempdir()) / f"rmqemu-bench-{a.events}"
    info = ensure_run(run, a.events, a.seed)
    paths = event_paths(str(run))
    size = sum(os.path.getsize(p) for p in paths)
    print(f"run: {run} ({info['events']:,} events, {size / 1e6:.0f} MB, {len(paths)} files, "
          f"{info['wall_s']:.0f} wall s modelled; load average {os.getloadavg()[0]:.1f})", flush=True)

    t = time.perf_counter()
    spark = build_session(None)
    startup = time.perf_counter() - t
    spark_s = []
    for _ in range(2):
        t = time.perf_counter()
        metrics = run_metrics(spark, str(run))
        spark_s.append(time.perf_counter() - t)
    full_s = None
    if a.full:
        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            run_report(spark, str(run), Path(out), workers=a.threads)
            full_s = time.perf_counter() - t
    stop_session(spark)

    man = json.loads((run / "manifest.json").read_text())
    nodes = [(n, i.get("role"), i.get("broker"), i.get("broker_id")) for n, i in man["nodes"].items()]
    con = duckdb.connect()
    t = time.perf_counter()
    res = duck.compute(con, paths, nodes)
    duck_s = time.perf_counter() - t

    n = metrics["events"]
    sh, dh = spark_headline(metrics), duck_headline(res)
    agree = {k: close(sh[k], dh[k]) for k in sh}
    print(f"spark: session start-up {startup:.1f} s; compute {spark_s[0]:.1f} s cold = {n / spark_s[0]:,.0f} events/s, "
          f"{spark_s[1]:.1f} s warm = {n / spark_s[1]:,.0f} events/s")
    if full_s is not None:
        print(f"spark: whole report (compute + plots + Parquet + HTML) {full_s:.1f} s = {n / full_s:,.0f} events/s")
    print(f"duckdb {duckdb.__version__}: {duck_s:.1f} s = {n / duck_s:,.0f} events/s")
    print(f"ratio duckdb/spark events/s: {spark_s[0] / duck_s:.1f}x (cold), {spark_s[1] / duck_s:.1f}x (warm)")
    print(f"headline numbers: stale views {sum(1 for r in sh['staleness'] if r[3])}, misrouted {sh['misrouted']}, "
          f"sends {sh['sends'][:4]}, lost {sh['lost']}")
    print("engines agree: " + ("yes" if all(agree.values()) else f"NO: {[k for k, v in agree.items() if not v]}"))
    if not all(agree.values()):
        for k, ok in agree.items():
            if not ok:
                print(f"  {k}: spark {str(sh[k])[:600]}\n  {k}: duck  {str(dh[k])[:600]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
