"""Timed messages across random DLedger failovers (docs/rocketmq-model.md §10.4): timed sends to the
master of the moment, spans of time, kills of the master (restarted at once or left dead until the
end). Every acked timed message reaches its real topic, never before its instant, and only a
failover after its delivery can bring it a second time: the followers' copy of the master's timer
checkpoint (slave_sync.py) never moves a new master past an entry the old one had not delivered."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.test_broker_timer_dledger import timed_send
from tests.roles.test_dledger_broker import started

OPS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.integers(1, 20)),  # TIMER_DELAY_SEC
    st.tuples(st.just("run"), st.sampled_from([500, 2000, 5000, 15000, 40000])),
    st.tuples(st.just("kill"), st.booleans()),  # the master; True: started again at once, else at the next kill
), max_size=10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, seed=st.integers(0, 3))
def test_every_acked_timed_message_arrives_never_early_and_twice_only_after_a_failover(ops: list, seed: int) -> None:
    net, master = started(seed)
    net.run_for(35000)  # the followers have learnt their master (a registration) and sync its checkpoint
    sent: dict[str, tuple[str, int]] = {}  # uniq -> (channel, kills before it)
    deliveries: list[dict] = []  # every timer.deliver line of every broker life
    kills = 0

    def harvest(name: str) -> None:
        deliveries.extend(net.drivers[name].events("timer.deliver"))
        net.drivers[name].actions.clear()

    for i, op in enumerate(ops):
        if op[0] == "send":
            sent[f"u{i}"] = (timed_send(net, master, f"u{i}", op[1], f"b{i}".encode()), kills)
        elif op[0] == "run":
            net.run_for(op[1])
        else:
            for dead in [n for n in net.members if n not in net.drivers]:  # a majority stays up
                net.restart(dead)
            harvest(master)
            net.kill(master)
            kills += 1
            master = net.wait_for_master(60000)
            if op[1]:
                net.restart(next(n for n in net.members if n not in net.drivers))
    for name in net.members:
        net.restart(name)
    master = net.wait_for_master(60000)
    net.run_for(60000)  # past every instant asked, with a master that has caught up
    for name in list(net.drivers):
        if name in net.members:
            harvest(name)
    acked = {u for u, (ch, _) in sent.items() if ch in net.answers and net.answers[ch].code == R.SUCCESS}
    store = net.broker(master).store
    arrived = Counter(r["properties"].get("UNIQ_KEY") for (topic, _), rs in store.queues.items() if topic == "T"
                      for r in rs)
    assert acked <= set(arrived), f"lost: {sorted(acked - set(arrived))}"
    assert all(body_bytes(r) == f"b{r['properties']['UNIQ_KEY'][1:]}".encode()
               for (topic, _), rs in store.queues.items() if topic == "T" for r in rs)
    assert all(e["lateness_ms"] >= 0 for e in deliveries), [e for e in deliveries if e["lateness_ms"] < 0]
    twice = {u for u, n in arrived.items() if n > 1}
    assert all(sent[u][1] < kills for u in twice), f"delivered again without a failover after it: {twice}"
    assert not net.violations
