"""Seed 003: route changes reach producers only by polling. The whole topology file is run as
``rmqemu launch`` runs it (faults from its ``faults:`` list), then the events are checked.

Timing claims are orderings and lower bounds (the namesrv cannot drop a hung broker before
120 s - 30 s scaled after the pause), never upper bounds.
"""

from __future__ import annotations

from rmqemu.emulator.cli.launch import run_topology
from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.emulator.node.main import NETTY_IDLE_S
from rmqemu.emulator.testing import read_events
from rmqemu.faults.launch_glue import build_plan
from tests.integration.seeds_lib import brokers_of, client_routes, sends, topology

EXPIRY_S, REGISTER_PERIOD_S = 120, 30


def sent_at(e: dict) -> float:
    """When an attempt left: a ``send`` event is written when its answer (or timeout) comes."""
    return e["ts"] - (e.get("latency_ms") or 0.0)


def first(events: list[dict], after: float, pred) -> dict | None:
    return next((e for e in events if e["ts"] >= after and pred(e)), None)


def test_master_kill_and_hung_master_reach_the_producer_at_its_route_poll(tmp_path) -> None:
    topo = load_topology(topology("seed-route-timing"))
    scale = topo.timing.scale
    result = run_topology(topo, run_dir=tmp_path / "run", plan=build_plan(topo), progress=False,
                          log=lambda msg: None)
    rd = result.run_dir
    assert result.died == []
    faults = {e["fault"]: e for e in read_events(rd, "fault.start")}
    kill, pause = faults["kill"], faults["pause"]
    assert kill["targets"] == ["broker-a-0"] and pause["targets"] == ["broker-b-0"]
    resume = next(e for e in read_events(rd, "fault.end") if e["fault"] == "pause")
    ns = read_events(rd, "ns.broker", node="namesrv-0")
    views = client_routes(rd, "pg-1-0", "OrderTopic")
    attempts = sends(rd, "pg-1-0")

    # -- kill: the channel closes, the namesrv drops the master at once, the producer at its poll
    # (``fault.start`` is written once the kill took effect, so the namesrv may log first)
    destroyed = first(ns, 0, lambda e: e["broker"] == "broker-a" and e["broker_id"] == 0 and e["change"] != "register")
    assert destroyed is not None and destroyed["change"] == "channel_destroy"
    view_a = first(views, destroyed["ts"], lambda e: "broker-a" not in brokers_of(e["publish_queues"]))
    assert view_a is not None and view_a["ts"] > destroyed["ts"]
    assert view_a["source"] == "namesrv-0"
    late_a = [e for e in attempts if e["broker"] == "broker-a" and sent_at(e) > view_a["ts"]]
    assert late_a == [], "no send to broker-a once the route dropped it"
    # sent after the namesrv saw the channel close (so after the kill): none can succeed. An
    # attempt sent just before the kill may be answered and logged a moment after the close.
    stale_a = [e for e in attempts if e["broker"] == "broker-a" and destroyed["ts"] < sent_at(e) < view_a["ts"]]
    assert all(e["outcome"] != "ok" for e in stale_a)

    # -- pause: nothing closes; the namesrv drops broker-b only after 120 s of silence
    dropped = first(ns, pause["ts"], lambda e: e["broker"] == "broker-b" and e["change"] != "register")
    assert dropped is not None and dropped["change"] in ("expired", "channel_destroy")
    assert dropped["ts"] < resume["ts"]
    assert dropped["ts"] - pause["ts"] >= (EXPIRY_S - REGISTER_PERIOD_S) * 1000 * scale - 50
    view_b = first(views, pause["ts"], lambda e: "broker-b" not in brokers_of(e["publish_queues"]))
    frozen_seen = pause["ts"] + NETTY_IDLE_S * 1000 * scale  # the earliest heartbeat timeout
    assert view_b is not None and view_b["ts"] > dropped["ts"]
    # meanwhile the producer kept sending to the hung broker: those attempts timed out (one sent
    # just before the pause may be answered and logged just after it)
    hung = [e for e in attempts if e["broker"] == "broker-b" and pause["ts"] < sent_at(e) < view_b["ts"]]
    assert hung and all(e["outcome"] == "timeout" for e in hung if sent_at(e) < frozen_seen), hung
    # from 120 s into the pause the producer's connection heartbeats may have given the frozen peer
    # up (docs/design.md §2, "Channels follow real sockets"): an attempt the route still sends there
    # is refused (CONNECT_BROKER_EXCEPTION, 10001), a late route poll on a loaded host lets one through
    assert all(e["outcome"] == "timeout" or e["code"] == 10001 for e in hung), hung
    assert not [e for e in attempts if e["broker"] == "broker-b" and view_b["ts"] < sent_at(e) < resume["ts"]]

    # -- resume: broker-b registers again and comes back into the producer's route
    back = first(ns, resume["ts"], lambda e: e["broker"] == "broker-b" and e["change"] == "register")
    assert back is not None
    view_back = first(views, back["ts"], lambda e: "broker-b" in brokers_of(e["publish_queues"]))
    assert view_back is not None
    assert [e for e in attempts if e["broker"] == "broker-b" and sent_at(e) > view_back["ts"] and e["outcome"] == "ok"]
    # broker-c was never touched: every send to it succeeded
    assert all(e["outcome"] == "ok" for e in attempts if e["broker"] == "broker-c")
