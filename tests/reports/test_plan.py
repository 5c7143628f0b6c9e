"""How a job is planned from the files' names and sizes alone (reports.plan): a small run whole in
one task; a large one's files cut into contiguous byte ranges, no read task much bigger than the
others, and its nodes into shares of about equal bytes; any node's lines go to one share."""
from __future__ import annotations

from rmqemu.reports.plan import ReadTask, plan

MB = 1 << 20


def files(sizes: dict[str, int]) -> list[tuple[str, int]]:
    return [(f"/r/events/{n}.jsonl" if n != "faults" else "/r/faults.jsonl", s) for n, s in sizes.items()]


LARGE = files({"pg-1-0": 20 * MB, "pg-1-1": 20 * MB, "cg-1-0": 9 * MB, "broker-a-0": 2000, "namesrv-0": 15_000,
               "faults": 3000})


def test_a_small_run_is_one_task_of_whole_files() -> None:
    p = plan([files({"pg-1-0": 5 * MB, "broker-a-0": 100, "faults": 10})])
    assert [r.whole for r in p.runs] == [True] and not p.cut
    [task] = p.reads
    assert [(x.name, x.index, x.start, x.end) for x in task.pieces] == [
        ("pg-1-0.jsonl", 0, 0, -1), ("broker-a-0.jsonl", 1, 0, -1), ("faults.jsonl", 2, 0, -1)]


def test_a_large_runs_files_are_cut_into_contiguous_ranges_and_packed_into_tasks_of_similar_size() -> None:
    p = plan([LARGE], piece_bytes=8 * MB)
    assert not p.runs[0].whole and p.cut == p.runs
    sizes = dict(LARGE)
    by_file: dict[str, list[tuple[int, int]]] = {}
    for task in p.reads:
        for x in task.pieces:
            by_file.setdefault(x.path, []).append((x.start, x.end))
    for path, ranges in by_file.items():
        ranges.sort()
        assert ranges[0][0] == 0 and ranges[-1][1] == -1, path
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False)), path  # no gap, no overlap
        ends = [e if e >= 0 else sizes[path] for _, e in ranges]
        assert max(e - s for (s, _), e in zip(ranges, ends, strict=True)) <= 8 * MB, path
    assert set(by_file) == set(sizes)

    def task_bytes(task: ReadTask) -> int:
        return sum((x.end if x.end >= 0 else sizes[x.path]) - x.start for x in task.pieces)
    loads = sorted(task_bytes(t) for t in p.reads)
    assert loads[-1] <= 8 * MB and loads[0] >= loads[-1] / 2 - 1, loads  # the small files ride along


def test_nodes_go_to_shares_of_about_equal_bytes_and_a_stray_node_to_a_stable_one() -> None:
    run = plan([LARGE], share_bytes=16 * MB).runs[0]
    assert run.n_shares == 4  # 49 MB of logs
    assert len({run.share_of(n) for n in ("pg-1-0", "pg-1-1", "cg-1-0")}) == 3  # the large ones apart
    assert run.share_of("injector") == run.share_of("injector") < run.n_shares
    every_node = plan([LARGE], share_bytes=0).runs[0]
    assert every_node.n_shares == 5 and len(set(every_node.shares.values())) == 5


def test_runs_keep_their_index_and_plan_apart() -> None:
    p = plan([files({"pg-1-0": 100}), LARGE, files({"pg-1-0": 200})])
    assert [(r.run, r.whole) for r in p.runs] == [(0, True), (1, False), (2, True)]
    assert {t.run for t in p.reads} == {0, 1, 2} and [t.run for t in p.reads if t.run != 1] == [0, 2]
