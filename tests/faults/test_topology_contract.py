"""FaultSpec as the topology loader embeds it: one "path: message" line per problem (docs/design.md §5)."""

import pytest

topology_load = pytest.importorskip("rmqemu.emulator.launcher.topology_load")
errors = pytest.importorskip("rmqemu.errors")


def test_loader_reports_fault_problems_with_their_paths():
    data = {"name": "t", "brokers": [{"name": "broker-a"}], "faults": [
        {"at": "5s", "kill": "broker-a-0", "restart_after": "20s"},
        {"at": "soon", "kill": "a"},
        {"at": 1, "kill": "a", "duration": 3},
        {"at": 1},
        {"at": 1, "clock": "bump", "bogus": 1},
    ]}
    with pytest.raises(errors.TopologyError) as err:
        topology_load.parse_topology(data)
    text = str(err.value)
    assert "faults[1].at: expected a duration such as 5s, 150ms, 2m, 1h or a number of seconds, got 'soon'" in text
    assert "faults[2]: kill: unexpected duration (kill takes at, restart_after" in text
    assert "faults[3]: expected exactly one fault kind key out of kill, stop, pause, partition, link, clock" in text
    assert "faults[4].bogus:" in text
    assert "faults[0]" not in text


def test_loader_accepts_the_design_faults():
    topo = topology_load.parse_topology({"name": "t", "brokers": [{"name": "broker-a"}], "faults": [
        {"at": "30s", "partition": "isolate", "targets": ["namesrv-0"], "duration": "150s"}]})
    assert topo.faults[0].kind == "partition" and topo.faults[0].duration == 150.0
