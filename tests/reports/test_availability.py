"""Availability and per-fault impact (docs/design.md §9) on a hand-made log, every answer
worked out by hand below.

The log: broker-a-0 hosts T and U (4 queues) from 1000. Faults:
  f1  pause broker-a-0      3000 .. 4000
  f2  link delay on pg-2-0  4500 .. 6000   (changes no truth: only an attribution window)
run.stop at 9000 (the measured end); the nodes exit at 9500.

Convergence (§7), from pg-1-1's view of T (the only client.route lines):
  1100 [broker-a]; 3500 []; 5000 [broker-a]. Truth of T: [broker-a] but [] in 3000..4000.
  pieces: 3000..3500 over, 3500..4000 fresh (both empty), 4000..5000 under, then fresh.
  stale intervals: [3000, 3500), [4000, 5000).
  f1: window [3000, next start 4500): both overlap, last ends 5000 -> converged 5000-3000 = 2000.
  f2: window [4500, run end): [4000, 5000) overlaps          -> converged 5000-4500 = 500.
Attribution windows = [start, max(end, start + converged)):
  f1: [3000, max(4000, 3000+2000)) = [3000, 5000)  (longer than the fault: converged_ms wins)
  f2: [4500, max(6000, 4500+500))  = [4500, 6000)  (the fault's end wins)

Attempts (P = misrouted "paused": to broker-a while paused, 3000 <= ts < 4000):
  pg-1-0 T: 1500 ok, 3100 timeout P, 3300 timeout P, 4200 ok, 4600 error, 4800 ok, 7000 ok
  pg-1-0 U: 1600 ok, 3200 timeout P, 4250 ok, 5200 error, 9200 ok (after run.stop: not measured)
  pg-1-1 T: 2000 ok, 3700 ok P, 6500 ok                           (ok only)
  pg-2-0 T: 1800 ok, 2000 error, 2500 error, 3400 timeout P, 4400 ok, 4700 timeout,
            4900 timeout, 5500 ok
Windows (first non-ok after an ok or first attempt -> next ok, else the measured end 9000):
  pg-1-0 T: [3100, 4200) 1100, [4600, 4800) 200  -> 2 windows, total 1300, max 1100
  pg-1-0 U: [3200, 4250) 1050, [5200, 9000) 3800 (the ok at 9200 is past run.stop) -> 2, 4850, 3800
  pg-1-1 T: none                                  -> 0, 0, 0
  pg-2-0 T: [2000, 4400) 2400, [4700, 5500) 800   -> 2, 3200, 2400
  availability: max 3800; total 1300 + 4850 + 3200 = 9350
Impact:
  f1 [3000, 5000): windows starting inside: 3100 (1100), 3200 (1050), 4600 (200), 4700 (800); not 2000 (it
     started before the fault, though it is the longest one holding 3000) -> rto 1100.
     failed: 3100, 3300, 4600 (pg-1-0 T), 3200 (U), 3400, 4700, 4900 (pg-2-0) = 7
     misrouted: 3100, 3300, 3200, 3400, and pg-1-1's ok 3700 = 5
  f2 [4500, 6000): windows starting inside: 4600 (200), 4700 (800), 5200 (3800) -> rto 3800.
     failed: 4600, 4700, 4900, 5200 = 4; misrouted: 0.
  4600, 4700 and 4900 lie in both windows and count for both faults.
"""
from __future__ import annotations

import pytest

from tests.reports.runlog import by, croute, exit_, fault, metrics_of, send, start, topic, write_run

T, U = "T", "U"
NODES = ("broker-a-0", "pg-1-0", "pg-1-1", "pg-2-0")


#: Each producer's attempts per topic: (ts, outcome), the scenario of this module's tests.
PLAN = {("pg-1-0", T): [(1500, "ok"), (3100, "timeout"), (3300, "timeout"), (4200, "ok"), (4600, "error"),
                        (4800, "ok"), (7000, "ok")],
        ("pg-1-0", U): [(1600, "ok"), (3200, "timeout"), (4250, "ok"), (5200, "error"), (9200, "ok")],
        ("pg-1-1", T): [(2000, "ok"), (3700, "ok"), (6500, "ok")],
        ("pg-2-0", T): [(1800, "ok"), (2000, "error"), (2500, "error"), (3400, "timeout"), (4400, "ok"),
                        (4700, "timeout"), (4900, "timeout"), (5500, "ok")]}


def _sends() -> list[dict]:
    out = [send(ts, node, name, "broker-a", outcome=outcome, msg_id=f"{node}-{name}-{ts}")
           for (node, name), attempts in PLAN.items() for ts, outcome in attempts]
    return sorted(out, key=lambda e: e["ts"])


def write_log(root):
    """Write the log of the module docstring as a run dir at ``root``."""
    events = [
        *[start(1000, n, "broker" if n.startswith("broker") else "producer") for n in NODES],
        topic(1000, "broker-a-0", T), topic(1000, "broker-a-0", U),
        croute(1100, "pg-1-1", T, ["broker-a"]), croute(3500, "pg-1-1", T, []), croute(5000, "pg-1-1", T, ["broker-a"]),
        *_sends(),
        *[exit_(9500, n, code=0) for n in NODES],
    ]
    faults = [
        fault(3000, "fault.start", "f1", "pause", ["broker-a-0"]),
        fault(4000, "fault.end", "f1", "pause", ["broker-a-0"]),
        fault(4500, "fault.start", "f2", "link", ["pg-2-0"], links=[["pg-2-0", "broker-a-0"]], delay_ms=50.0),
        fault(6000, "fault.end", "f2", "link", ["pg-2-0"], links=[["pg-2-0", "broker-a-0"]], delay_ms=50.0),
        {"ts": 9000, "node": "launcher", "kind": "run.stop"},
    ]
    return write_run(root, events, faults)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return write_log(tmp_path_factory.mktemp("availability"))


@pytest.fixture(scope="module")
def metrics(run_dir):
    return metrics_of(run_dir)


def _pair(m, producer, name):
    row = by(m["availability"]["windows"], producer=producer, topic=name)
    return row["windows"], row["total_ms"], row["max_ms"]


def test_a_non_ok_attempt_opens_a_window_the_next_ok_closes(metrics):
    assert _pair(metrics, "pg-1-0", T) == (2, 1300.0, 1100.0)  # [3100, 4200) + [4600, 4800)
    assert _pair(metrics, "pg-2-0", T) == (2, 3200.0, 2400.0)  # [2000, 4400) + [4700, 5500)


def test_a_window_without_a_later_ok_ends_at_the_measured_end(metrics):
    # [3200, 4250) 1050, then [5200, 9000) 3800: run.stop at 9000; the ok at 9200 is after it
    # and closes nothing.
    assert _pair(metrics, "pg-1-0", U) == (2, 4850.0, 3800.0)


def test_a_producer_whose_attempts_were_all_ok_has_no_window(metrics):
    assert _pair(metrics, "pg-1-1", T) == (0, 0.0, 0.0)


def test_two_topics_of_one_producer_are_separate(metrics):
    # pg-1-0's U failure at 3200 sits inside its T window [3100, 4200) but opens U's own
    # window [3200, 4250); U's window [5200, 9000) is not closed by T's ok at 7000.
    assert {(r["producer"], r["topic"]) for r in metrics["availability"]["windows"]} == {
        ("pg-1-0", T), ("pg-1-0", U), ("pg-1-1", T), ("pg-2-0", T)}
    assert _pair(metrics, "pg-1-0", U)[0] == 2 and _pair(metrics, "pg-1-0", T)[0] == 2


def test_run_totals(metrics):
    a = metrics["availability"]
    assert (a["max_unavailable_ms"], a["total_unavailable_ms"]) == (3800.0, 9350.0)  # 1300 + 4850 + 3200
    assert a["unavailable_pairs"] == 3
    assert a["max_unavailable_cluster_s"] == pytest.approx(3800.0 / 1000 / 0.01)


def test_convergence_sets_the_attribution_windows(metrics):
    f1, f2 = (by(metrics["staleness"]["faults"], fault_id=f) for f in ("f1", "f2"))
    assert (f1["converged_ms"], f2["converged_ms"]) == (2000.0, 500.0)
    # offsets from the first event (1000): f1 ends at 3000 + 2000 = 5000 (past its 4000 end),
    # f2 at its own end 6000 (4500 + 500 = 5000 is earlier)
    assert (f1["impact_end_offset_ms"], f2["impact_end_offset_ms"]) == (4000.0, 5000.0)


def test_rto_is_the_longest_window_starting_inside_the_attribution_window(metrics):
    f1, f2 = (by(metrics["staleness"]["faults"], fault_id=f) for f in ("f1", "f2"))
    assert f1["rto_ms"] == 1100.0  # not 2400: pg-2-0's window opened at 2000, before f1
    assert f2["rto_ms"] == 3800.0  # pg-1-0 U from 5200, inside [4500, 6000)


def test_failed_and_misrouted_sends_count_for_every_window_holding_them(metrics):
    f1, f2 = (by(metrics["staleness"]["faults"], fault_id=f) for f in ("f1", "f2"))
    # f1 [3000, 5000): 3100 3300 4600 3200 3400 4700 4900; without the convergence extension
    # ([3000, 4000)) it would be 4. f2 [4500, 6000): 4600 4700 4900 5200, three shared with f1.
    assert (f1["failed_sends"], f2["failed_sends"]) == (7, 4)
    # misrouted (paused): 3100 3300 3200 3400 and the ok 3700 -- misrouted whatever the outcome
    assert (f1["misrouted_sends"], f2["misrouted_sends"]) == (5, 0)
    assert metrics["misrouted"]["by_reason"]["paused"] == 5


def test_availability_plot(run_dir, tmp_path):
    """The plot data holds the six windows above (wall s since the first event, 1000) and
    each producer's span of measured attempts; the figure is drawn with the faults shaded."""
    from rmqemu.reports import plotdata, plots
    from rmqemu.reports.local import analyse_dirs

    data = plotdata.assemble(analyse_dirs([str(run_dir)])[0])
    got = sorted((r.producer, r.topic, round(r.start_s, 3), round(r.end_s, 3)) for r in data.unavailable.itertuples())
    assert got == [("pg-1-0", T, 2.1, 3.2), ("pg-1-0", T, 3.6, 3.8), ("pg-1-0", U, 2.2, 3.25),
                   ("pg-1-0", U, 4.2, 8.0), ("pg-2-0", T, 1.0, 3.4), ("pg-2-0", T, 3.7, 4.5)]
    spans = {r.producer: (round(r.first_s, 3), round(r.last_s, 3), r.attempts) for r in data.producers.itertuples()}
    # pg-1-0: 1500 .. 7000 (9200 is past run.stop), 11 measured attempts
    assert spans == {"pg-1-0": (0.5, 6.0, 11), "pg-1-1": (1.0, 5.5, 3), "pg-2-0": (0.8, 4.5, 8)}
    figs = plots.render_all(data, tmp_path)
    assert "availability.png" in [f.file for f in figs]
    assert (tmp_path / "availability.png").stat().st_size > 10_000

