"""Channel bookkeeping of the ROUTER side (monitor events + SRCFD), without sockets."""

from __future__ import annotations

from rmqemu.emulator.transport._conns import ConnTracker


def test_a_connection_gets_a_channel_and_its_close_names_it() -> None:
    t = ConnTracker()
    t.accepted(7)
    conn, new = t.on_frame(7, b"broker-a-0", "broker-a-0", 1.0)
    assert new and conn.channel == "broker-a-0#7#1" and t.live(conn.channel) is conn
    assert t.on_frame(7, b"broker-a-0", "broker-a-0", 2.0) == (conn, False) and conn.last_ms == 2.0
    assert t.disconnected(7) is conn and not conn.live and t.live(conn.channel) is None


def test_a_reused_fd_is_a_new_channel() -> None:
    t = ConnTracker()
    t.accepted(7)
    old, _ = t.on_frame(7, b"broker-a-0", "broker-a-0", 1.0)
    t.disconnected(7)
    t.accepted(7)
    new, is_new = t.on_frame(7, b"broker-a-0", "broker-a-0", 2.0)
    assert is_new and new.channel != old.channel and t.channels() == [new.channel]


def test_a_frame_before_its_accepted_event_and_dropped_frames() -> None:
    t = ConnTracker()
    conn, _ = t.on_frame(9, b"pg-1-0", "pg-1-0", 1.0)  # the monitor lagged
    t.accepted(9)  # absorbed: the same connection
    assert t.on_frame(9, b"pg-1-0", "pg-1-0", 5.0, touch=False) == (conn, False)
    assert conn.last_ms == 1.0  # a frame dropped by a link fault is not activity
    assert t.disconnected(9) is conn and t.disconnected(9) is None


def test_a_close_of_an_unknown_connection_is_nothing() -> None:
    t = ConnTracker()
    t.accepted(3)
    assert t.disconnected(3) is None  # it never sent a frame: no role knew it


def test_another_peer_on_the_fd_closes_the_old_connection_once() -> None:
    t = ConnTracker()
    t.accepted(4)
    old, _ = t.on_frame(4, b"admin-1", "admin-1", 1.0)
    new, is_new = t.on_frame(4, b"admin-2", "admin-2", 2.0)  # its close and accept not drained yet
    assert is_new and t.implicit_closes == [old] and not old.live
    assert t.disconnected(4) is None  # the late close of the old one: already applied
    t.accepted(4)  # the late accept of the new one: absorbed
    assert t.live(new.channel) is new and t.on_frame(4, b"admin-2", "admin-2", 3.0) == (new, False)


def test_idle_scan_finds_the_idle_and_when_the_next_can_go_idle() -> None:
    t = ConnTracker()
    quiet, _ = t.on_frame(3, b"pg-1-0", "pg-1-0", 100.0)
    busy, _ = t.on_frame(4, b"cg-1-0", "cg-1-0", 900.0)
    closing, _ = t.on_frame(5, b"cg-2-0", "cg-2-0", 50.0)
    idle, next_due = t.idle_scan(1_150.0, 1_000.0, {closing.channel})
    assert idle == [quiet]  # the one closing already is not closed twice
    assert next_due == 1_900.0  # the busy one's last frame + idle_ms: no reason to look before
    assert t.idle_scan(1_060.0, 1_000.0, set()) == ([closing], 1_100.0)  # with nothing closing, the oldest is idle
    assert ConnTracker().idle_scan(5.0, 1_000.0, set()) == ([], 1_005.0)  # none yet: a new one idles later
