"""The runtime loop with a fake transport and a fake clock: no sockets, no real waiting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqemu import jsonlines
from rmqemu.emulator.node.clock import ClockSetting, FakeClock, SkewableClock
from rmqemu.emulator.node.io import EventLog, StoreDir
from rmqemu.emulator.node.runtime import EXIT_LAUNCHER_LOST, Runtime
from rmqemu.emulator.protocol import Frame, request
from rmqemu.emulator.roles.common.base import (
    Action,
    After,
    Append,
    Cancel,
    ChannelEvent,
    Emit,
    Every,
    Exit,
    Inbound,
    Now,
    Persist,
    Reply,
    Request,
    Role,
)
from rmqemu.emulator.transport.base import BadInput, ControlLost
from rmqemu.emulator.transport.fake import FakeTransport

PEER = "127.0.0.1:9876"


class Probe(Role):
    """A role that records what it is given and returns what the test queued."""

    role = "probe"

    def __init__(self) -> None:
        super().__init__("probe-0", "127.0.0.1:10000")
        self.seen: list[tuple[str, Any, Now]] = []
        self.on_start: list[Action] = []
        self.on_stop: list[Action] = []
        self.replies: list[Frame | None] = []
        self.fail_on: str | None = None

    def start(self, now: Now) -> list[Action]:
        return self.on_start

    def stop(self, now: Now) -> list[Action]:
        self.seen.append(("stop", None, now))
        return self.on_stop

    def on_timer(self, name: str, now: Now) -> list[Action]:
        self.seen.append(("timer", name, now))
        return []

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        if self.fail_on == "message":
            raise KeyError("boom")
        self.seen.append(("message", msg, now))
        return [Reply(msg.channel, msg.frame.response(remark="pong"))]

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        self.seen.append(("channel", event, now))
        return []

    def on_clock(self, now: Now) -> list[Action]:
        self.seen.append(("clock", None, now))
        return []

    def reply_handler(self, resp: Frame | None, now: Now) -> list[Action]:
        self.replies.append(resp)
        return [Emit("pull", {"code": None if resp is None else resp.code})]  # any registered kind

    def state(self) -> dict[str, Any]:
        return {"answer": 42}

    def timer_times(self, name: str) -> list[float]:
        return [now.mono_ms for kind, n, now in self.seen if kind == "timer" and n == name]


@pytest.fixture
def rig(tmp_path: Path):
    clock = FakeClock(1_000.0)
    role = Probe()
    transport = FakeTransport(clock=clock)
    skew = SkewableClock(host=clock)
    events = EventLog(tmp_path / "probe.jsonl", "probe-0", skew.now_ms, host=clock)
    rt = Runtime(role, transport, skew, events, StoreDir(tmp_path / "store"), mono=clock,
                 start_fields={"pid": 1}, stop_grace_ms=500)

    def read_events(kind: str | None = None) -> list[dict[str, Any]]:
        lines = jsonlines.records(tmp_path / "probe.jsonl")
        return [e for e in lines if kind is None or e["kind"] == kind]

    return rt, role, transport, clock, read_events


def run_until(rt: Runtime, clock: FakeClock, t: float) -> None:
    while clock.current_ms < t and rt.exit_code is None:
        rt.step(max_wait_ms=t - clock.current_ms)


def test_start_writes_node_start_and_timers_run_at_a_fixed_rate(rig) -> None:
    rt, role, _t, clock, events = rig
    role.on_start = [Every("tick", 50, 100), After("once", 120)]
    rt.start()
    run_until(rt, clock, 1_000 + 400)
    assert role.timer_times("tick") == [1050, 1150, 1250, 1350]
    assert role.timer_times("once") == [1120]
    start = events("node.start")[0]
    assert start["role"] == "probe" and start["pid"] == 1 and start["node"] == "probe-0"


def test_a_timer_a_whole_period_behind_skips_the_missed_runs(rig) -> None:
    rt, role, _t, clock, _e = rig
    role.on_start = [Every("tick", 100, 100)]
    rt.start()
    run_until(rt, clock, 1_100)
    clock.advance(1_050)  # the process was frozen for a while (SIGSTOP)
    run_until(rt, clock, 2_400)
    assert role.timer_times("tick") == [1100, 2150, 2200, 2300, 2400]


def test_cancel_and_replace_one_shot_timers(rig) -> None:
    rt, role, _t, clock, _e = rig
    rt.start()
    rt._perform([After("a", 100), After("b", 100), Cancel("a"), After("b", 300)])
    run_until(rt, clock, 1_500)
    assert role.timer_times("a") == [] and role.timer_times("b") == [1300]


def test_request_gets_its_response_once_and_a_late_one_is_ignored(rig) -> None:
    rt, role, t, clock, events = rig
    rt.start()
    rt._perform([Request(PEER, request(105, {"topic": "T"}), 30, role.reply_handler)])
    sent = t.requests(105)[0]
    assert sent.frame.opaque > 0 and sent.addr == PEER
    t.respond(sent, code=17)
    rt.step(0)
    assert [r.code for r in role.replies] == [17]
    t.respond(sent, code=0)  # a duplicate (link fault) or late answer
    rt.step(0)
    assert len(role.replies) == 1 and len(events("pull")) == 1


def test_an_answered_request_does_not_wake_the_loop_at_its_deadline(rig) -> None:
    rt, role, t, clock, _e = rig
    rt.start()
    rt._perform([Request(PEER, request(105), 30, role.reply_handler),
                 Request(PEER, request(106), 60, role.reply_handler)])
    t.respond(t.requests(105)[0])
    rt.step(0)
    before = clock.current_ms
    rt.step(max_wait_ms=1_000)  # the fake transport's poll advances the clock by what it waits
    assert clock.current_ms == before + 60  # the waiting request's deadline, not the answered one's
    assert role.replies[-1] is None  # and that one timed out
    before = clock.current_ms
    rt.step(max_wait_ms=1_000)
    assert clock.current_ms == before + 1_000  # nothing left to wake up for


def test_request_timeout_and_refused_connect_answer_none(rig) -> None:
    rt, role, t, clock, _e = rig
    rt.start()
    t.refuse.add("127.0.0.1:1")
    rt._perform([Request("127.0.0.1:1", request(105), 30, role.reply_handler)])
    assert role.replies == [None]  # at once, like RemotingConnectException
    rt._perform([Request(PEER, request(105), 30, role.reply_handler)])
    run_until(rt, clock, clock.current_ms + 29)
    assert role.replies == [None]
    run_until(rt, clock, clock.current_ms + 5)
    assert role.replies == [None, None]
    t.respond(t.requests(105)[-1])  # after the timeout: dropped
    rt.step(0)
    assert role.replies == [None, None]


def test_inbound_request_is_answered_on_its_channel(rig) -> None:
    rt, role, t, _clock, _e = rig
    rt.start()
    t.deliver(Frame(code=34, opaque=7), channel="broker-a-0#5#1", peer="broker-a-0")
    rt.step(0)
    reply = [s for s in t.sent if s.channel == "broker-a-0#5#1"][0]
    assert reply.frame.opaque == 7 and reply.frame.is_response and reply.frame.remark == "pong"


def test_a_role_exception_is_an_event_not_a_dead_node(rig) -> None:
    rt, role, t, _clock, events = rig
    rt.start()
    role.fail_on = "message"
    t.deliver(Frame(code=34, opaque=1))
    rt.step(0)
    assert rt.exit_code is None
    assert events("node.error")[0]["error"] == "KeyError: 'boom'"


def test_an_action_that_does_not_encode_is_an_event_not_a_dead_node(rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply the wire cannot encode (a header number past 64 bits, from a forged receipt handle)
    is the role's bug: a node.error, and the node serves on."""
    rt, _role, t, _clock, events = rig
    rt.start()

    def refuse(channel: str, frame: Frame) -> bool:
        raise TypeError("Integer exceeds 64-bit range")

    monkeypatch.setattr(t, "send_to_channel", refuse)
    t.deliver(Frame(code=34, opaque=1))
    rt.step(0)
    assert rt.exit_code is None
    assert events("node.error")[0]["error"] == "Reply: TypeError: Integer exceeds 64-bit range"
    monkeypatch.undo()
    t.deliver(Frame(code=34, opaque=2))
    rt.step(0)
    assert any(s.frame.opaque == 2 for s in t.sent)


def test_bad_frames_are_logged_and_dropped(rig) -> None:
    rt, _role, t, _clock, events = rig
    rt.start()
    t.push(BadInput("broker-a-0", "header is not JSON"))
    rt.step(0)
    assert events("wire.bad_frame")[0]["peer"] == "broker-a-0" and rt.exit_code is None


def test_control_commands_set_clock_links_and_state(rig) -> None:
    rt, role, t, clock, events = rig
    rt.start()
    t.command("set_clock", "c1", setting=ClockSetting(offset_ms=130_000).to_dict())
    t.command("set_links", "c2", rules=[{"src": "probe-0", "dst": "namesrv-0", "blocked": True}],
              peers={"namesrv-0": PEER})
    t.command("state", "c3")
    t.command("no-such-command", "c4")
    rt.step(0)
    acks = {cmd_id: (ok, result) for cmd_id, ok, result in t.acks}
    assert acks["c1"][0] and acks["c1"][1]["local_ms"] == clock.current_ms + 130_000
    assert rt.now().wall_ms == clock.current_ms + 130_000 and rt.now().mono_ms == clock.current_ms
    assert events("node.clock")[0]["offset_ms"] == 130_000
    assert [now.wall_ms for kind, _, now in role.seen if kind == "clock"] == [clock.current_ms + 130_000]
    assert acks["c2"] == (True, {"rules": 1}) and t.peers == {"namesrv-0": PEER}
    assert acks["c3"][1]["answer"] == 42 and acks["c3"][1]["_runtime"]["clock"]["offset_ms"] == 130_000
    assert acks["c4"][0] is False and "unknown control command" in acks["c4"][1]["error"]


def test_shutdown_runs_stop_and_waits_for_its_requests(rig) -> None:
    rt, role, t, clock, _e = rig
    role.on_start = [Every("tick", 10, 10)]
    role.on_stop = [Request(PEER, request(104), 30, role.reply_handler)]
    rt.start()
    t.command("shutdown")
    rt.step(0)
    assert [k for k, *_ in role.seen if k == "stop"] == ["stop"] and rt.exit_code is None
    ticks = len(role.timer_times("tick"))
    t.respond(t.requests(104)[0])
    rt.step(0)
    rt.step(0)
    assert rt.exit_code == 0 and role.replies[0].code == 0
    assert len(role.timer_times("tick")) == ticks  # no timer runs once stopping


def test_a_graceful_stop_does_not_wait_for_a_held_long_poll(rig) -> None:
    """A pull or HA transfer the server holds would keep a node up for the stop grace (12 s at
    scale 1) for nothing: the stop waits for the other requests only."""
    rt, role, t, clock, _e = rig
    role.on_start = [Request(PEER, request(11), 30_000, role.reply_handler, held=True)]
    role.on_stop = [Request(PEER, request(104), 30_000, role.reply_handler)]
    rt.start()
    t.command("shutdown")
    rt.step(0)
    assert rt.exit_code is None  # the unregister is still out
    t.respond(t.requests(104)[0])
    rt.step(0)
    rt.step(0)
    assert rt.exit_code == 0 and len(rt.pending) == 1  # the held pull was not waited for


def test_exit_action_stops_after_its_requests_time_out(rig) -> None:
    rt, role, t, clock, _e = rig
    role.on_stop = [Request(PEER, request(104), 30, role.reply_handler)]
    rt.start()
    rt._perform([Exit(5)])
    run_until(rt, clock, clock.current_ms + 100)
    assert rt.exit_code == 5 and role.replies == [None]


def test_a_lost_launcher_ends_the_node_with_its_own_exit_event(rig) -> None:
    rt, _role, t, _clock, events = rig
    rt.start()
    t.push(ControlLost("the launcher process exited"))
    rt.step(0)
    assert rt.exit_code == EXIT_LAUNCHER_LOST
    assert events("node.exit")[0]["reason"] == "the launcher process exited"


def test_persist_keeps_a_bak_and_reads_fall_back_to_it(rig, tmp_path: Path) -> None:
    rt, _role, _t, _clock, _e = rig
    rt._perform([Persist("config/topics.json", "v1"), Persist("config/topics.json", "v2"),
                 Append("queues/T/0", ("a", "b\n"))])
    store = tmp_path / "store"
    assert (store / "config/topics.json").read_text() == "v2"
    assert (store / "config/topics.json.bak").read_text() == "v1"
    assert (store / "queues/T/0").read_text() == "a\nb\n"
    (store / "config/topics.json").write_text("")  # a crash left it empty
    assert rt.store.read("config/topics.json") == "v1"
    assert rt.store.read("config/nothing.json") is None
    with pytest.raises(ValueError):
        rt.store.persist("../escape", "x")
