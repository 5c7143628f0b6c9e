"""The launcher's live role-error watch on hand-written event files (docs/design.md §8, exit 3)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.launcher.errorwatch import ErrorWatch, role_errors
from rmqemu.emulator.node.clock import FakeClock
from tests.emulator.test_lagwatch import append, lag


def error(node: str, ts: float, text: str) -> dict[str, object]:
    return {"ts": ts, "node": node, "kind": "node.error", "local_ms": ts, "error": text}


def test_one_line_per_nodes_first_error_a_count_of_all_and_torn_lines_wait(tmp_path: Path) -> None:
    ev = tmp_path / "events"
    ev.mkdir()
    clock = FakeClock(0.0)
    watch = ErrorWatch(tmp_path, mono=clock)
    assert watch.poll() == [] and watch.counts == {}
    append(ev / "broker-a-0.jsonl", lag("broker-a-0", 1000, 1.0), error("broker-a-0", 1001, "KeyError: 'x'"),
           torn='{"ts": 1002, "node": "broker-a-0", "kind": "node.error", "err')
    assert watch.poll() == []  # not a second since the last look
    clock.advance(1000)
    [line] = watch.poll()
    assert line.startswith("error: broker-a-0's role raised KeyError: 'x': a bug in rmqemu")
    assert str(tmp_path / "logs" / "broker-a-0.log") in line
    with (ev / "broker-a-0.jsonl").open("a") as f:
        f.write('or": "TypeError: y"}\n')  # the torn line completed: counted, not said again
    append(ev / "pg-0.jsonl", error("pg-0", 1003, "ValueError: z"))
    clock.advance(1000)
    assert [line.split("'s")[0] for line in watch.poll()] == ["error: pg-0"]
    assert watch.counts == {"broker-a-0": 2, "pg-0": 1} == role_errors(tmp_path)
    assert watch.poll(force=True) == []  # nothing new


@settings(max_examples=30, deadline=None)
@given(text=st.text(min_size=1, max_size=200))
def test_any_error_text_is_said_as_written(tmp_path_factory, text: str) -> None:
    run = tmp_path_factory.mktemp("run")
    (run / "events").mkdir()
    append(run / "events" / "n-0.jsonl", error("n-0", 1.0, text))
    [line] = ErrorWatch(run).poll(force=True)
    assert f"role raised {text}: a bug in rmqemu" in line


def test_a_damaged_store_file_is_a_warning_not_a_role_error(tmp_path: Path) -> None:
    ev = tmp_path / "events"
    ev.mkdir()
    store = {"ts": 5.0, "node": "broker-a-0", "kind": "broker.store", "local_ms": 5.0,
             "queue_file": "store/commitlog/T/0.jsonl", "problem": "gap", "line": 3, "offset": 1, "count": 1,
             "reason": "no message at queue offset 1 before line 3: served as lost"}
    append(ev / "broker-a-0.jsonl", lag("broker-a-0", 1000, 1.0), store, error("broker-a-0", 6, "KeyError: 'x'"))
    watch = ErrorWatch(tmp_path)
    warning, said = watch.poll(force=True)
    assert warning == ("warning: broker-a-0's store: store/commitlog/T/0.jsonl line 3: no message at queue "
                       "offset 1 before line 3: served as lost (docs/design.md §6)")
    assert said.startswith("error: broker-a-0's role raised KeyError")
    assert watch.counts == {"broker-a-0": 1} == role_errors(tmp_path)
