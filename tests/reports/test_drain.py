"""metrics.json ``drain`` (reports/core/health.py): the launcher's ``run.drain`` line as written, its
durations with cluster-second twins; all null for a run without one (docs/design.md §6, §7)."""
from __future__ import annotations

from tests.reports.runlog import SCALE, exit_, metrics_of, send, start, topic, write_run

EVENTS = [start(1000, "broker-a-0", "broker"), start(1000, "pg-1-0", "producer"), topic(1000, "broker-a-0", "T"),
          send(1200, "pg-1-0", "T", "broker-a", msg_id="m1"),
          exit_(1900, "pg-1-0", code=0), exit_(2500, "broker-a-0", code=0)]
DRAIN = {"ts": 2000.0, "node": "launcher", "kind": "run.drain", "completed": False, "waited_ms": 300.0,
         "timeout_ms": 300.0, "lag_total": 3, "unreadable": [],
         "lag_left": [{"group": "cg", "topic": "T", "broker": "broker-a", "queue_id": 1, "lag": 3}]}


def test_drain_is_copied_from_run_drain_and_null_without_it(tmp_path):
    stop = {"ts": 1950.0, "node": "launcher", "kind": "run.stop"}
    got = metrics_of(write_run(tmp_path / "with", EVENTS, faults=[stop, DRAIN]))["drain"]
    assert got == {"completed": False, "waited_ms": 300.0, "waited_cluster_s": 300.0 / 1000 / SCALE,
                   "timeout_ms": 300.0, "timeout_cluster_s": 300.0 / 1000 / SCALE, "lag_total": 3,
                   "lag_left": DRAIN["lag_left"], "unreadable": [], "interrupted": False}

    none = metrics_of(write_run(tmp_path / "without", EVENTS, faults=[stop]))["drain"]
    assert none["completed"] is None and none["waited_cluster_s"] is None and none["lag_left"] == []
