"""``docs/events.md``, rendered from the event registry (the page is generated, not written).

Why generate it: the page, the writers' checks and the Spark schema used to be three copies of
one contract that drifted apart; now the page is one view of :mod:`rmqemu.event_kinds`, and
``tests/test_events.py`` fails when the checked-in page is not what this module renders.
Regenerate with ``python -m rmqemu.events > docs/events.md``.
"""

from __future__ import annotations

from rmqemu.event_kinds import CLOCK_SETTING, COMMON, DRAIN_LAG, FAULT_PARAMS, QUEUE_DATA, SECTIONS
from rmqemu.event_types import QUEUE, Field, Kind, Struct, describe

REGENERATE = "python -m rmqemu.events > docs/events.md"

INTRO = f"""\
# Events of a run

<!-- Generated from rmqemu/event_kinds.py by `{REGENERATE}`:
     edit the registry, not this page. -->

Every process appends JSON lines to `runs/<run-id>/events/<node>.jsonl` (flushed per line: a
killed node loses at most the line it was writing, and `rmqemu report` counts such a truncated
line instead of failing); the fault injector writes `runs/<run-id>/faults.jsonl`. This page lists
every kind the emulator writes. The kinds and fields of docs/design.md §6 (the contract the Spark
metrics are defined on) are kept as named there; rows and fields marked *(ext)* are additions.

The page is generated from the event registry, `rmqemu/event_kinds.py`
(`{REGENERATE}`). The same registry makes the report's read schema
(`reports/core/schema.py`), and every writer refuses a kind or a field it does not list
(`rmqemu.events.check`): a new kind or field is declared there first.

Fields are written `` `name` type: meaning``; `?` after the name: not on every line of the
kind; `or null` after the type: may be `null`. Types: `str`, `int` (`long`: may pass 32 bits),
`float` (a whole number will do), `bool`, `[T]` a list, `[str, str]` a pair, `{{node: str}}` an
object keyed by node name; `queue`, `queue_data`, `clock setting`, `params` and `drain lag` are
the objects of [Nested objects](#nested-objects). A field has exactly its type on every line
(never a number inside a list of strings, nor `1` for `true`): the report reads the lines with
a strict typed reader.

Common fields of every line:
"""

SKEW = """\
`ts` is never skewed: a clock fault changes `local_ms` and what the node decides with it (expiry
stamps, timeouts), not the time axis of the report.
"""

OUTRO = """\
## What the report reads

`reports/core/schema.py` builds the report's read schema from this registry: one column per
field above, of its type (of `params` only the members the report uses). The report parses only
the columns its analysis reads (`reports/core/analysis.py`); a line whose value in one of them
has another type counts as a broken line of its file (`bad_lines`), as a line that is not JSON
or has no `ts` does. Unknown fields are ignored, so a log with extra fields still loads. Runs
written before queues were objects (`[broker, queue_id]` pairs) are converted as they are read
(docs/design.md §6, "Older runs"). The metric definitions (truth, views, staleness over/under, convergence,
misrouted-send reasons) are those of docs/design.md §7; the report's Parquet tables
(`report/parquet/<table>`) are the intermediate results of those definitions, one row per
interval or per send.
"""

#: The objects of the "Nested objects" table and where they appear.
NESTED: tuple[tuple[Struct, str], ...] = (
    (QUEUE, "`client.route` `publish_queues`, `subscribe_queues`; `rebalance` `allocated`"),
    (QUEUE_DATA, "`ns.route` `queue_datas`"),
    (CLOCK_SETTING, "`node.clock` `setting`"),
    (FAULT_PARAMS, "`fault.start`, `fault.end` `params`"),
    (DRAIN_LAG, "`run.drain` `lag_left`"),
)


def _ext(ext: bool) -> str:
    return " *(ext)*" if ext else ""


def render_field(f: Field, in_ext_kind: bool = False) -> str:
    """`` `name`? type|null *(ext)*: meaning`` (the marks only where they apply)."""
    text = f"`{f.name}`{'' if f.required else '?'} {describe(f.type)}{' or null' if f.nullable else ''}"
    text += _ext(f.ext and not in_ext_kind)
    return text + (f": {f.meaning}" if f.meaning else "")


def render_kind(k: Kind) -> str:
    """One table row: the kind, its writer, what a line means and its fields."""
    fields = "; ".join(render_field(f, k.ext) for f in k.fields)
    cell = k.meaning + (f". {fields}" if fields else "")
    return f"| `{k.name}`{_ext(k.ext)} | {k.writer} | {cell} |"


def markdown() -> str:
    """The whole page, as checked in at ``docs/events.md``."""
    out = [INTRO, "| field | meaning |", "|---|---|"]
    out += [f"| `{f.name}`{_ext(f.ext)} {describe(f.type)} | {f.meaning} |" for f in COMMON]
    out += ["", SKEW]
    for section in SECTIONS:
        out += [f"## {section.title}", "", "| kind | written by | fields |", "|---|---|---|"]
        out += [render_kind(k) for k in section.kinds]
        out.append("")
    out += ["## Nested objects", "", "| object | in | members |", "|---|---|---|"]
    for struct, where in NESTED:
        out.append(f"| `{struct.name}` | {where} | {'; '.join(render_field(f) for f in struct.fields)} |")
    out += ["", OUTRO]
    return "\n".join(out).rstrip("\n") + "\n"
