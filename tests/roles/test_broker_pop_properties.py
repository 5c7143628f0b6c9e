"""Jepsen-style properties of a master's POP over random schedules (tests/roles/pop_schedules.py):
pops of a normal and a FIFO group, acks, renewals, forgotten leases, clock advances, kills and
graceful restarts, then a drain. docs/rocketmq-model.md §10.2, §10.3."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.roles.pop_schedules import FIFO, NORMAL, World, play, schedules


def skipped_by_5x(w: World) -> set[tuple[int, int]]:
    """FIFO offsets 5.x's ``commitAndNext`` skips: before an offset acked on a broker that had lost the
    pop's order info in a kill (the ack answers the next offset), docs/rocketmq-model.md §10.3."""
    return {(e["queue_id"], o) for e in w.events("pop.ack") if e["result"] == "no_order_info"
            for o in range(e["offset"])}


def check(w: World) -> None:
    # never lost: every message sent was acked in time by each group, after the drain, but for the
    # FIFO offsets 5.x itself skips after a kill
    where = {x.uniq: (x.queue_id, x.offset) for x in w.leases if x.group == FIFO and not x.retry}
    for group in (NORMAL, FIFO):
        lost = set(w.sent) - w.acked(group)
        if group == FIFO:
            lost = {u for u in lost if where.get(u) not in skipped_by_5x(w)}
        assert not lost, f"{group}: lost {sorted(lost)}"
    # the drain's rule (offsets caught up, nothing leased) never ends a run with a message un-acked
    for group, unacked in w.drain_looks:
        left = {u for u in unacked if group == NORMAL or where.get(u) not in skipped_by_5x(w)}
        assert not left, f"{group}: drained with {sorted(left)} un-acked"
    # a lease acked (or renewed) while it ran is never revived, whatever restarts came after
    # (a renewal in the pop's own millisecond can make two leases alike: then every one of them must be acked)
    acked_keys = {x.key for x in w.leases if x.acked and x.group == NORMAL} - {
        x.key for x in w.leases if not x.acked and x.group == NORMAL}
    for e in w.events("pop.revive"):
        if not e["fifo"]:
            key = (e["group"], e["retry"], e["queue_id"], e["queue_offset"], e["pop_time"],
                   e["pop_time"] + e["invisible_ms"])
            assert key not in acked_keys, f"revived after its ack: {e}"
    # attempts only grow: a revived copy's attempt is one more than the lease that ran out
    by_key = {x.key: x for x in w.leases}
    for e in w.events("pop.revive"):
        if e["result"] == "retry":
            lease = by_key.get((e["group"], e["retry"], e["queue_id"], e["queue_offset"], e["pop_time"],
                                e["pop_time"] + e["invisible_ms"]))
            assert lease is None or e["attempt"] == lease.attempt + 1, (e, lease)
    for x in w.leases:
        assert x.attempt >= 1
    # FIFO: a queue's batch never skips an un-acked offset, comes in queue order, and never goes out
    # while a lease of that queue (of the same broker life) still runs un-acked
    for epoch, q, batch, now, before in w.fifo_batches:
        offsets = [x.offset for x in batch]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), offsets
        skipped = [o for o in range(offsets[0]) if (q, o) not in w.acked_fifo and (q, o) not in skipped_by_5x(w)]
        assert not skipped, f"queue {q}: batch {offsets} skips un-acked {skipped}"
        running = [x for x in w.leases[:before] if x.group == FIFO and x.queue_id == q and x.epoch == epoch
                   and not x.acked and max(x.pop_time, x.since) <= now < x.end]
        assert not running, f"queue {q}: batch {offsets} while {[(x.offset, x.end) for x in running]} ran"
    # FIFO attempts grow by one from one pop of a queue to the next for the offsets both handed out
    # (5.x counts against the last pop only: an offset a smaller batch left out starts again at 1)
    last: dict[tuple[int, int], list] = {}
    for epoch, q, batch, _, _ in w.fifo_batches:
        before = {x.offset: x.attempt for x in last.get((epoch, q), [])}
        for x in batch:
            if x.offset in before:
                assert x.attempt == before[x.offset] + 1, (epoch, q, x.offset, before[x.offset], x.attempt)
        last[(epoch, q)] = batch

@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=schedules)
def test_pop_never_loses_never_revives_an_ack_and_keeps_fifo_order(schedule):
    check(play(schedule))


def test_a_fixed_schedule_with_every_step_holds():
    schedule = [("send", 0), ("send", 1), ("send", 0), ("pop", ("cg", -1, 4, 5000)), ("pop", ("fg", 0, 1, 5000)),
                ("ack", 0), ("renew", (1, 15000)), ("advance", 6000), ("restart", True), ("pop", ("fg", 0, 2, 2000)),
                ("advance", 3000), ("pop", ("cg", -1, 4, 2000)), ("ack", 3), ("restart", False), ("advance", 12000)]
    check(play(schedule))
