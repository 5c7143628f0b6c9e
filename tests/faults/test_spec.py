"""FaultSpec: docs/design.md §5's examples, every param, and the error messages."""

import pytest
from pydantic import BaseModel, ValidationError

from rmqemu.emulator.launcher.fault_spec import FaultSpec, parse_duration, parse_probability


class Topology(BaseModel):
    """How the topology loader embeds the model: errors carry the path faults[i]."""

    faults: list[FaultSpec] = []


def errors_of(entries):
    with pytest.raises(ValidationError) as err:
        Topology.model_validate({"faults": entries})
    return {".".join(map(str, e["loc"])): e["msg"] for e in err.value.errors()}


@pytest.mark.parametrize("text, seconds", [
    ("5s", 5.0), ("150ms", 0.15), ("2m", 120.0), ("1h", 3600.0), ("1.5s", 1.5), (".5s", 0.5),
    ("7", 7.0), (7, 7.0), ("2min", 120.0), (0.25, 0.25), (" 3 s ", 3.0), ("+130s", 130.0), ("0", 0.0),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


def test_parse_duration_signed_and_errors():
    assert parse_duration("-130s", signed=True) == -130.0
    with pytest.raises(ValueError, match="expected a duration >= 0, got '-1s'"):
        parse_duration("-1s")
    for bad in ("5 sec", "s", "", "1d", True, None, [1], float("inf"), "1e3s"):
        with pytest.raises(ValueError, match="expected a"):
            parse_duration(bad)


def test_parse_probability():
    assert parse_probability(0.05) == 0.05
    assert parse_probability("5%") == 0.05
    assert parse_probability("1") == 1.0
    for bad in (1.5, "120%", -0.1, "lots", True):
        with pytest.raises(ValueError, match="expected a probability"):
            parse_probability(bad)


def test_design_examples():
    topo = Topology.model_validate({"faults": [
        {"at": "5s", "kill": "broker-a-0", "restart_after": "20s"},
        {"at": "30s", "partition": "isolate", "targets": ["namesrv-0"], "duration": "150s"},
        {"at": "60s", "clock": "bump", "targets": ["namesrv-1"], "offset": "130s"},
        {"at": "90s", "partition": "groups", "groups": [["namesrv-0"], ["broker-b-0"]],
         "oneway": True, "duration": "60s"},
    ]})
    kill, iso, bump, groups = topo.faults
    assert (kill.kind, kill.kill, kill.at, kill.restart_after) == ("kill", ["broker-a-0"], 5.0, 20.0)
    assert (iso.kind, iso.mode, iso.targets, iso.duration) == ("partition", "isolate", ["namesrv-0"], 150.0)
    assert (bump.kind, bump.mode, bump.offset, bump.duration) == ("clock", "bump", 130.0, None)
    assert groups.groups == [["namesrv-0"], ["broker-b-0"]] and groups.oneway is True
    assert kill.describe() == "kill broker-a-0 at 5s"


def test_link_and_clock_params():
    link = FaultSpec.model_validate({"at": 10, "link": "broker-a-0", "to": "namesrv", "delay": "200ms",
                                     "jitter": "50ms", "loss": "5%", "duplicate": 0.01, "duration": "30s"})
    assert (link.link, link.to, link.delay, link.jitter, link.loss, link.duplicate) == (
        ["broker-a-0"], ["namesrv"], 0.2, 0.05, 0.05, 0.01)
    strobe = FaultSpec.model_validate({"at": 0, "clock": "strobe", "offset": "-2s", "period": "500ms"})
    assert (strobe.offset, strobe.period) == (-2.0, 0.5)
    drift = FaultSpec.model_validate({"at": 0, "clock": "drift", "ppm": -300, "targets": "one:namesrv"})
    assert drift.ppm == -300.0 and drift.targets == ["one:namesrv"]
    assert FaultSpec.model_validate({"at": 0, "clock": "reset", "targets": "all"}).mode == "reset"


def test_targets_accept_string_list_and_commas():
    assert FaultSpec.model_validate({"at": 0, "pause": "a,b"}).pause == ["a", "b"]
    assert FaultSpec.model_validate({"at": 0, "stop": ["a", "b"]}).stop == ["a", "b"]


def test_no_semicolons_in_messages():
    """The topology loader splits a value error on '; ' into separate problems."""
    errs = errors_of([{"at": 1}, {"at": 1, "kill": "a", "duration": 3}, {"at": 1, "clock": "bump"},
                      {"at": 1, "link": "a"}, {"at": 1, "partition": "groups"}])
    assert len(errs) == 5 and not any(";" in m for m in errs.values())


def test_error_paths_and_messages():
    errs = errors_of([
        {"at": "soon", "kill": "a"},
        {"at": 1, "kill": "a", "duration": 3},
        {"at": 1},
        {"at": 1, "kill": "a", "pause": "b"},
        {"at": 1, "clock": "bump", "bogus": 1},
        {"at": 1, "partition": "wedge"},
        {"at": 1, "link": "a", "loss": "200%"},
        {"at": 1, "pause": []},
    ])
    assert errs["faults.0.at"] == ("Value error, expected a duration such as 5s, 150ms, 2m, 1h "
                                   "or a number of seconds, got 'soon'")
    assert ("kill: unexpected duration (kill takes at, restart_after, a kill lasts until restart_after)"
            in errs["faults.1"])
    assert ("expected exactly one fault kind key out of kill, stop, pause, partition, link, clock (got none)"
            in errs["faults.2"])
    assert "got kill, pause" in errs["faults.3"]
    assert errs["faults.4.bogus"] == "Extra inputs are not permitted"
    assert "'isolate'" in errs["faults.5.partition"] and "'groups'" in errs["faults.5.partition"]
    assert "expected a probability" in errs["faults.6.loss"]
    assert "expected at least one target" in errs["faults.7.pause"]


@pytest.mark.parametrize("entry, message", [
    ({"partition": "groups"}, "partition: groups needs groups"),
    ({"partition": "halves", "groups": [["a"], ["b"]]}, "takes targets, not groups"),
    ({"partition": "groups", "groups": [["a"], ["b"]], "targets": "c"}, "takes groups, not targets"),
    ({"partition": "groups", "groups": [["a"]]}, "at least two groups"),
    ({"partition": "majorities-ring", "oneway": True}, "cannot be oneway"),
    ({"partition": "isolate", "offset": "1s"}, "partition: unexpected offset"),
    ({"link": "a"}, "at least one of delay, jitter, loss, duplicate"),
    ({"link": "a", "delay": 0}, "at least one of delay"),
    ({"link": "a", "delay": 1, "targets": "b"}, "link: unexpected targets"),
    ({"clock": "bump"}, "clock: bump needs offset"),
    ({"clock": "strobe", "offset": "1s"}, "clock: strobe needs period"),
    ({"clock": "strobe", "offset": "1s", "period": 0}, "strobe needs a period > 0"),
    ({"clock": "drift"}, "clock: drift needs ppm"),
    ({"clock": "drift", "ppm": "fast"}, "expected a number of parts per million"),
    ({"clock": "bump", "offset": 1, "ppm": 5}, "clock: bump does not take ppm"),
    ({"clock": "reset", "duration": 5}, "reset is instantaneous"),
    ({"pause": "a", "duration": 0}, "duration must be > 0"),
    ({"pause": "a", "oneway": True}, "pause: unexpected oneway"),
    ({"kill": "a", "restart_after": "-1s"}, "expected a duration >= 0"),
])
def test_cross_field_errors(entry, message):
    with pytest.raises(ValidationError, match=message):
        FaultSpec.model_validate({"at": 0, **entry})


def test_model_is_frozen():
    spec = FaultSpec.model_validate({"at": 0, "pause": "a"})
    with pytest.raises(ValidationError):
        spec.at = 5  # type: ignore[misc]


def test_json_schema_admits_what_users_write():
    props = FaultSpec.model_json_schema()["properties"]
    assert {"type": "string"} in props["at"]["anyOf"]
    kill_alternatives = [alt for outer in props["kill"]["anyOf"] for alt in outer.get("anyOf", [outer])]
    assert {"type": "string"} in kill_alternatives  # a single target, not only a list
    assert any(alt.get("pattern") == "%$" for alt in props["loss"]["anyOf"])
