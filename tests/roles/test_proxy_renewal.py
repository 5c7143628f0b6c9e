"""The proxy keeps a PushConsumer's leases alive (emulator/roles/proxy/renewal.py, 5.x's
``DefaultReceiptHandleManager``), over a real broker's POP on the fake clock: a slow listener's
message never comes back while the client lives, its ack with the first handle ends the renewed
lease, and a client that terminates or goes silent has its messages handed back at once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.roles.common.base import Emit
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy.proxy import ProxyConfig

from .proxy_helpers import ProxyRig
from .test_cluster_flow import A0
from .test_proxy_receive import ack, receive, rig_with

Code = pb.Code


def tick(rig: ProxyRig, ms: int, heartbeat: bool = True) -> None:
    """``ms`` of the shared clock in 5 s steps, the proxy's and the broker's timers both run, the
    client heartbeating as a live PushConsumer does (every 10 s)."""
    for _ in range(ms // 5000):
        rig.proxy.advance(2500)
        rig.pump()  # the proxy's requests answered before the broker's half of the step
        rig.cluster.brokers[A0].advance(2500)
        rig.cluster.pump()  # the broker's registrations keep it in the namesrv's routes
        if heartbeat:
            rig.call("Heartbeat", pb.HeartbeatRequest(client_type=pb.PUSH_CONSUMER))
        rig.pump()


def lines(rig: ProxyRig, kind: str) -> list[dict]:
    return [a.fields for a in rig.proxy.actions if isinstance(a, Emit) and a.kind == kind]


def attempts_of(rig: ProxyRig, msg_id: str) -> list[int]:
    return [a for e in rig.cluster.brokers[A0].events("pop.lease") if e["msg_id"] == msg_id for a in [e["attempt"]]]


def test_a_slow_listeners_message_is_renewed_and_its_first_handle_acks_it() -> None:
    rig = rig_with([b"x"])
    _, got = receive(rig, auto_renew=True)  # a PushConsumer: 60 s leases
    tick(rig, 200_000)  # a listener three minutes long
    renewals = [e for e in lines(rig, "proxy.renew") if e["msg_id"] == "M0"]
    assert [(e["reason"], e["invisible_ms"], e["result"]) for e in renewals][:2] == [
        ("renew", 60_000, "ok"), ("renew", 180_000, "ok")]
    assert attempts_of(rig, "M0") == [1]  # never handed out again meanwhile
    assert rig.cluster.brokers[A0].events("pop.revive") == []
    assert all(ack(rig, m).status.code == Code.OK for m in got)  # the handles the client was given
    tick(rig, 400_000)
    assert rig.cluster.brokers[A0].events("pop.revive") == [] and attempts_of(rig, "M0") == [1]
    assert rig.proxy.role.renewal.held == {}


def test_without_renewal_the_same_listener_sees_its_message_again() -> None:
    """The control: with the proxy's renewal off, the 60 s lease runs out under the listener."""
    rig = rig_with([b"x"], ProxyConfig(enableProxyAutoRenew=False))
    receive(rig, auto_renew=True)
    tick(rig, 200_000)
    assert lines(rig, "proxy.renew") == []
    assert [(e["msg_id"], e["attempt"]) for e in rig.cluster.brokers[A0].events("pop.revive")][:1] == [("M0", 2)]


def test_a_terminated_or_silent_clients_leases_go_back_within_a_second() -> None:
    for how in ("terminated", "silent"):
        rig = rig_with([b"x"])
        receive(rig, auto_renew=True)
        if how == "terminated":
            rig.call("NotifyClientTermination", pb.NotifyClientTerminationRequest())
            rig.pump()
        else:
            tick(rig, 130_000, heartbeat=False)  # no call for over 120 s: its channel expired
        cleared = [e for e in lines(rig, "proxy.renew") if e["reason"] == "clear"]
        assert {(e["msg_id"], e["invisible_ms"], e["result"]) for e in cleared} >= {("M0", 1000, "ok")}, how
        assert rig.proxy.role.renewal.held == {}, how
        tick(rig, 10_000)  # the 1 s lease, its revive: back in the retry topic, one attempt later
        revived = [(e["msg_id"], e["attempt"]) for e in rig.cluster.brokers[A0].events("pop.revive")]
        assert ("M0", 2) in revived, how  # long before its lease (60 s, or the renewed 180 s) ran out


def test_an_ack_that_crosses_a_renewal_ends_the_renewed_lease_too() -> None:
    """5.x's handle lock makes an ack wait for a renewal in flight and use its new handle; here the
    ack goes with the old one and the renewal's answer acks the lease it made."""
    rig = rig_with([b"x"])
    _, got = receive(rig, auto_renew=True)
    rig.proxy.advance(51_000)  # the scan at 50 s sent a renewal; no answer yet
    assert [r.frame.fields["invisibleTime"] for r in rig.proxy.pending] == [60_000] * len(got)
    assert all(ack(rig, m).status.code == Code.OK for m in got)  # answered with the renewal in between
    assert [e["reason"] for e in lines(rig, "proxy.renew")] == ["renew"] * len(got)
    tick(rig, 300_000)
    assert rig.cluster.brokers[A0].events("pop.revive") == [] and attempts_of(rig, "M0") == [1]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("receive"), st.just(0)), st.tuples(st.just("ack"), st.integers(0, 9)),
                          st.tuples(st.just("tick"), st.sampled_from([5_000, 30_000, 60_000, 240_000]))),
                max_size=12))
def test_while_the_client_lives_nothing_it_holds_comes_back_and_every_ack_holds(schedule: list) -> None:
    """Random receives, acks (with the handles the client was given, renewed or not under it) and
    spans of time: no lease runs out while the client heartbeats; every ack is OK; once the
    client terminates, what it still held comes back, one attempt later."""
    rig = rig_with([b"x", b"y", b"z"])
    holding: list[pb.Message] = []
    for kind, arg in schedule:
        if kind == "receive":
            holding += receive(rig, auto_renew=True)[1]
        elif kind == "ack" and holding:
            assert ack(rig, holding.pop(arg % len(holding))).status.code == Code.OK
        elif kind == "tick":
            tick(rig, arg)
    assert rig.cluster.brokers[A0].events("pop.revive") == []  # renewed all along
    rig.call("NotifyClientTermination", pb.NotifyClientTerminationRequest())
    rig.pump()
    tick(rig, 10_000)
    revived = {e["msg_id"] for e in rig.cluster.brokers[A0].events("pop.revive")}
    assert revived == {m.system_properties.message_id for m in holding}
