"""Delay levels and the retry schedule on real processes at timing.scale 0.01, with rmqemu's own
clients (docs/rocketmq-model.md §2.9, §4.7), in one cluster of two masters:

- on broker-a, messages sent with delay level 2 (5 s) are consumed by a group whose listener fails
  everything (``maxReconsumeTimes: 3``): each comes back through the schedule 10 s, 30 s and
  1 min after its failures (reconsumeTimes 1, 2, 3), then goes to the DLQ, never early;
- on broker-b, messages sent with level 5 (1 min) are held by a master that is killed before they
  are due and restarted after: they are delivered after the restart, none lost, none early, and
  its slave's copy of the delay offsets (GET_ALL_DELAY_OFFSET) follows the master's.

Timing claims come from the events: each stage's due time (the broker's clock, cluster ms, turned
into host ms with the run's anchor and scale, docs/design.md §3) is never after its arrival's
``ts``, and the broker's own lateness is never negative (the levels themselves are checked exactly;
the upper bound only allows for a loaded host). The run's report (the analysis in this process, as
Spark's tasks run it: tests/realclients runs it in Spark on a run with delays) then counts the same: the
retries by reconsumeTimes and the DLQ, nothing early, the held messages late in the kill's row, and
no failed or delayed message as lost, nor as consumed but never acked unless its send failed after
the broker stored it (docs/design.md §7).
"""

from __future__ import annotations

import json
from typing import Any

from rmqemu.emulator.testing import read_events
from rmqemu.reports.local import analyse_dirs
from rmqemu.reports.metrics import document
from tests.eventdoc import contract_problems

SCALE = 0.01
WAIT_S = 60
DELAYS_MS = {2: 5000, 3: 10000, 4: 30000, 5: 60000}
SLACK_WALL_MS = 500  # a timer late by this much on a loaded host is still no wrong level (unit tests: exact)
TOPO = {
    "name": "delays",
    "timing": {"scale": SCALE},
    "namesrvs": 1,
    "brokers": [{"name": "broker-a", "autoCreateTopicEnable": False},
                {"name": "broker-b", "slaves": 1, "autoCreateTopicEnable": False}],
    "topics": [{"name": "Retried", "brokers": ["broker-a"], "queues": 2},
               {"name": "Held", "brokers": ["broker-b"], "queues": 2}],
    # bodies of hostile text and bytes (docs/design.md §5): what the killed master holds must come back whole
    "producers": [{"group": "pg-retried", "topics": ["Retried"], "rate": 0.2, "delay_level": 2, "body": "mixed"},
                  {"group": "pg-held", "topics": ["Held"], "rate": 0.2, "delay_level": 5, "body": "mixed"}],
    "consumers": [{"group": "cg-fail", "subscribe": ["Retried"], "fail_rate": 1.0, "maxReconsumeTimes": 3},
                  {"group": "cg-ok", "subscribe": ["Held"]}],
    "duration": "100000s",
}


def by_msg(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        out.setdefault(e["msg_id"], []).append(e)
    return out


def offsets_file(run_dir, node: str) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / "store" / node / "config" / "delayOffset.json").read_text())
    except (OSError, ValueError):
        return None


def test_retries_follow_the_delay_levels_to_the_dlq_and_a_killed_master_delivers_after_its_restart(
        start_cluster) -> None:
    c = start_cluster(TOPO)
    rd = c.run_dir

    def parked(node: str) -> list[dict[str, Any]]:
        return read_events(rd, "delay.park", node=node, where=lambda e: e["reconsume_times"] == 0)

    c.wait_for(lambda: len(parked("broker-b-0")) >= 3 and len(parked("broker-a-0")) >= 3, WAIT_S,
               "three parked messages on each master")
    kill = c.kill("broker-b-0", restart_after="70s")  # level 5 is 60 s: what it parked is due only meanwhile
    c.wait_for(lambda: not kill.active, WAIT_S, "broker-b-0 restarted")
    killed_at = read_events(rd, "node.exit", node="broker-b-0")[-1]["ts"]
    restarted_at = read_events(rd, "node.start", node="broker-b-0")[-1]["ts"]
    held = ({e["msg_id"] for e in parked("broker-b-0") if e["ts"] < killed_at}
            - {e["msg_id"] for e in read_events(rd, "delay.deliver", node="broker-b-0") if e["ts"] < killed_at})
    assert len(held) >= 2, "the killed master held no message"
    stored = len([e for e in parked("broker-b-0") if e["ts"] < killed_at])
    kept = c.state("broker-b-0")["queues"].get("SCHEDULE_TOPIC_XXXX:4", 0)  # level 5's queue, from its store
    assert kept >= stored, f"the restarted master holds {kept} of the {stored} messages it parked before the kill"
    cohort = {e["msg_id"] for e in parked("broker-a-0")}

    def consumed(group: str) -> set[str]:
        return {m for e in read_events(rd, "consume", where=lambda e: e["group"] == group) for m in e["msg_ids"]}

    def dead_lettered() -> set[str]:
        return {e["msg_id"] for e in read_events(rd, "retry.back", where=lambda e: e["outcome"] == "dlq")}

    c.wait_for(lambda: held <= consumed("cg-ok"), WAIT_S, "every held message consumed after the restart")
    c.wait_for(lambda: cohort <= dead_lettered(), WAIT_S, "every failing message in the DLQ")

    # broker-b: what it held is delivered by the restarted master, late and never early
    deliveries = by_msg(read_events(rd, "delay.deliver", node="broker-b-0"))
    assert held <= set(deliveries)
    for m in held:
        assert all(d["ts"] > restarted_at and d["lateness_ms"] > 0 for d in deliveries[m]), deliveries[m]
    assert all(d["lateness_ms"] >= 0 for ds in deliveries.values() for d in ds)
    assert not read_events(rd, "delay.deliver", node="broker-b-1"), "a slave never delivers"
    c.wait_for(lambda: (offsets_file(rd, "broker-b-1") or {}).get("offsetTable", {}).get("5", 0) >= len(held),
               WAIT_S, "the slave's delayOffset.json (synced from the master) past the held messages")

    # broker-a: 5 s, then 10 s, 30 s and 1 min after each failure, then the DLQ
    anchor = json.loads((rd / "manifest.json").read_text())["started_ms"]
    backs = by_msg(read_events(rd, "retry.back", node="broker-a-0"))
    parks = by_msg(read_events(rd, "delay.park", node="broker-a-0"))
    arrivals = by_msg(read_events(rd, "delay.deliver", node="broker-a-0"))
    after_failure: dict[int, list[float]] = {}
    for m in cohort:
        assert [(b["reconsume_times"], b["level"], b["outcome"]) for b in backs[m]] == [
            (1, 3, "retry"), (2, 4, "retry"), (3, 5, "retry"), (4, None, "dlq")], backs[m]
        assert len({b["origin_msg_id"] for b in backs[m]}) == 1 and backs[m][0]["topic"] == "Retried"
        assert [(p["level"], p["delay_ms"]) for p in parks[m]] == [(lv, DELAYS_MS[lv]) for lv in (2, 3, 4, 5)]
        assert [a["reconsume_times"] for a in arrivals[m]] == [0, 1, 2, 3]
        for park, arrival in zip(parks[m], arrivals[m], strict=True):
            due_host = anchor + (park["due_ms"] - anchor) * SCALE  # the broker's cluster clock in host ms
            assert arrival["due_ms"] == park["due_ms"] and arrival["lateness_ms"] >= 0, (park, arrival)
            assert due_host - 1 <= arrival["ts"] < due_host + SLACK_WALL_MS, (due_host, park, arrival)
        for back, arrival in zip(backs[m][:3], arrivals[m][1:], strict=True):
            after_failure.setdefault(back["level"], []).append(arrival["ts"] - back["ts"])
    dlq = c.state("broker-a-0")["queues"]
    assert dlq.get("%DLQ%cg-fail:0", 0) >= len(cohort)
    print("delays: wall ms from a send-back to the retry's arrival, by level:",
          {lv: [round(g) for g in sorted(gs)] for lv, gs in sorted(after_failure.items())})
    assert not c.died
    assert contract_problems(rd) == [], "lines that break the event registry (rmqemu/event_kinds.py)"
    m = document(analyse_dirs([str(c.finish())], plots_too=False)[0])
    # a send the kill cut off after broker-b stored it is delivered after the restart, never acked:
    # consumed but never acked, rightly (rare: the kill must fall between the put and the answer)
    acked = {e["msg_id"] for e in read_events(rd, "send") if e["outcome"] == "ok"}
    failed = {e["msg_id"] for e in read_events(rd, "send") if e["outcome"] != "ok"}
    unacked = {i for e in read_events(rd, "consume") for i in e["msg_ids"]} - acked
    assert unacked <= failed, unacked - failed
    report(m, cohort, held, len(unacked))


def report(m: dict[str, Any], cohort: set[str], held: set[str], unacked: int) -> None:
    """The run's metrics.json counts what the events showed: each of the cohort retried at reconsumeTimes
    1, 2, 3 and dead-lettered at 4, the held messages late (in the kill's row too), nothing early, and
    neither a failed message nor one still parked at the end counted lost, nor consumed but never acked
    unless its send failed after the broker stored it (``unacked`` of them, from the events)."""
    times = {r["reconsume_times"]: r for r in m["retries"]["by_reconsume_times"] if r["group"] == "cg-fail"}
    assert all(times[n]["retried"] >= len(cohort) for n in (1, 2, 3)) and times[4]["dead_lettered"] >= len(cohort)
    assert m["retries"]["dead_lettered"] >= len(cohort) and m["retries"]["dropped"] == 0
    d = m["delays"]
    assert d["early"] == 0 and d["delivered"] >= 4 * len(cohort) + len(held), d
    assert next(t for t in d["by_topic"] if t["topic"] == "Held")["late"] >= len(held)
    [kill] = [f for f in m["staleness"]["faults"] if f["fault"] == "kill"]
    assert kill["late_deliveries"] >= len(held) and kill["late_max_cluster_s"] > 1.0, kill
    c = m["consumption"]
    assert {t["topic"] for t in c["by_topic"]} == {"Retried", "Held"}  # no %RETRY% or %DLQ% row
    assert (c["lost"], c["lost_per_group"], c["consumed_unacked"]) == (0, 0, unacked), c
    retried = next(t for t in c["by_topic"] if t["topic"] == "Retried")
    assert retried["dead_lettered"] >= len(cohort) and retried["consumed"] == 0, retried
