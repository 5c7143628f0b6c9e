"""A property of the timer store (docs/rocketmq-model.md §10.4) over random schedules: timed sends at
random instants, the clock advancing, set forward and back, graceful restarts. Every acked timed
message reaches its real topic exactly once, with its body and properties intact, never before its
instant (less what the broker's clock was set back since its start: 5.x's write time never moves
back) and, when nothing held it up, within one precision of it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import broker
from tests.roles.fakes import Driver, FakeStore, FakeTime
from tests.strategies import bodies, text

HIDDEN = ("TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_OUT_MS", "CLUSTER")
OPS = st.one_of(
    st.tuples(st.just("send"), st.integers(-3000, 90000), bodies(), text(max_size=12)),
    st.tuples(st.just("advance"), st.integers(0, 20000)),
    st.tuples(st.just("jump"), st.integers(-40000, 40000)),
    st.tuples(st.just("restart"), st.integers(0, 40000)),
)


def run(ops: list[tuple]) -> None:
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    # each instance, the ms its clock was set back since its start, and whether anything but time moved it
    drivers: list[tuple[Driver, float, bool]] = []
    back, offset, disturbed = 0.0, 0.0, False
    sent: dict[str, tuple[bytes, dict[str, str], int]] = {}
    for i, op in enumerate(ops):
        if op[0] == "send":
            _, ahead, body, value = op
            uniq = f"u{i}"
            at = int(d.now().wall_ms) + ahead
            props = {"UNIQ_KEY": uniq, "TIMER_DELIVER_MS": str(at), "P": value}
            raw = body if isinstance(body, bytes) else body.encode()
            resp, _ = send_raw(d, raw, props)
            assert resp is not None and resp.code == R.SUCCESS
            sent[uniq] = (raw, props, at)
        elif op[0] == "advance":
            d.advance(op[1])
        elif op[0] == "jump":
            offset += op[1]
            back += max(0, -op[1])
            disturbed = True
            d.set_clock(offset_ms=offset)
        else:
            d.stop()
            drivers.append((d, back, disturbed))
            time.mono_ms += op[1]
            d, back, disturbed = broker(store=store, time=time), max(0.0, -offset), True
            d.set_clock(offset_ms=offset)
    d.advance(200000)
    drivers.append((d, back, disturbed))
    got = [r for q in range(4) for r in d.role.store.queues.get(("A", q), [])]
    uniqs = [r["properties"]["UNIQ_KEY"] for r in got]
    assert sorted(uniqs) == sorted(sent), "every timed message exactly once"
    for r in got:
        raw, props, at = sent[r["properties"]["UNIQ_KEY"]]
        assert body_bytes(r) == raw
        assert {k: v for k, v in r["properties"].items() if k not in HIDDEN} == props
    for drv, set_back, moved in drivers:
        for e in drv.events("timer.deliver"):
            assert e["lateness_ms"] >= -set_back, e
            if not moved:
                assert e["lateness_ms"] <= drv.role.timer.precision, e


def send_raw(d: Driver, body: bytes, props: dict[str, str]):
    header = {"producerGroup": "pg", "topic": "A", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": 1, "sysFlag": 0, "bornTimestamp": 1, "flag": 0, "properties": props,
              "reconsumeTimes": 0, "unitMode": False, "batch": False}
    return d.send(RC.SEND_MESSAGE_V2, header, body, channel="prod-ch", peer="pg-0")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, max_size=25))
def test_every_timed_message_is_delivered_once_intact_and_never_early(ops: list[tuple]) -> None:
    run(ops)
