"""The node's wall-clock floor for every request timeout (``timing.minRequestTimeoutWallMs``,
docs/design.md §3), seen through the real runtime over a fake clock: at scale 0.01 a client's
route query (``mqClientApiTimeout`` 3000 ms, 30 wall ms scaled) waits the floor, and floor 0 is
exact scaling."""

import pytest

from rmqemu.emulator.protocol import RequestCode
from rmqemu.emulator.roles.client.producer import Producer
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from tests.roles.fakes import Driver

NS = ["127.0.0.1:9001"]


def producer(floor: float) -> Driver:
    spec = NodeSpec.from_dict({"name": "pg-1-0", "role": "producer", "seed": 7, "namesrv_addrs": NS,
                               "namesrv_names": ["namesrv-0"], "group": "pg-1"})
    d = Driver(Producer.from_spec(spec, "127.0.0.1:7000", lambda p: None), scale=0.01, min_request_wall_ms=floor)
    d.start()
    d.advance(10)  # the first route poll (10 ms in)
    assert d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)
    return d


def host_ms_until_timeout(d: Driver) -> float:
    """Host ms from now until the pending route query is given up."""
    start = d.time.mono_ms
    while d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        d.advance(100)  # 1 host ms
    return d.time.mono_ms - start


def test_route_query_at_scale_001_waits_the_floor_not_30_wall_ms() -> None:
    assert host_ms_until_timeout(producer(200.0)) == pytest.approx(200.0, abs=1.5)


def test_floor_0_is_exact_scaling() -> None:
    assert host_ms_until_timeout(producer(0.0)) == pytest.approx(30.0, abs=1.5)


def test_floor_below_the_scaled_timeout_changes_nothing() -> None:
    assert host_ms_until_timeout(producer(20.0)) == pytest.approx(30.0, abs=1.5)
