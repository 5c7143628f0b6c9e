"""``report/report.html``: one self-contained page (plots embedded as base64 PNG), rendered from
``reports/templates/report.html.j2`` with autoescaping (every name and value comes from user
files: topology names, node names, fault ids).

Order follows what a reader asks first: the verdict (PASS/FAIL of the run's expectations,
docs/design.md §9), the summary table of headline numbers, then the faults with their windows
and convergence, then the plots, then the detail tables and the definitions. Every duration is
shown in wall ms and in cluster seconds. The page needs no network, script or other file: it
can be mailed or attached to an issue as it is.

This module prepares plain data (rows of formatted cells); the template only lays it out. The
fault table is driven by :data:`FAULT_COLUMNS` and the plots by the figure list, so a new
column or plot needs no template change.
"""
from __future__ import annotations

import base64
import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from rmqemu.errors import ExpectationError
from rmqemu.reports.html_delays import delay_tables
from rmqemu.reports.html_failover import failover_tables
from rmqemu.reports.html_pop import holder_label, pop_tables, timed_table
from rmqemu.reports.html_transactions import transaction_tables
from rmqemu.reports.plot_axes import fault_colour
from rmqemu.reports.plots import Figure
from rmqemu.reports.summary import Metrics, fmt_ms, fmt_num, headline_rows, timing_health
from rmqemu.verdicts import Expectations, Verdict, judge

MAX_ROWS = 200

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1250px;
color:#222;line-height:1.35}
h1{font-size:1.5em;margin-bottom:0}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:4px}table{border-collapse:collapse;margin:8px 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.sec td{background:#fafafa;font-weight:600}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:middle}
img{max-width:100%;border:1px solid #eee}.cap{color:#555;font-size:.9em;margin:2px 0 6px}
.note{color:#8a5a00;font-size:.9em}code{background:#f5f5f5;padding:0 3px}
"""

#: The verdict banner's look (kept apart from CSS: rmqemu report --compare reuses CSS).
VERDICT_CSS = """
.verdict{margin:14px 0 4px;padding:8px 12px;border-radius:4px;border:1px solid}
.verdict b{font-size:1.25em;margin-right:8px}.verdict.PASS{background:#e8f5e9;border-color:#81c784;color:#1b5e20}
.verdict.FAIL{background:#fdecea;border-color:#e57373;color:#b71c1c}.verdict.NONE{background:#f5f5f5;border-color:#ccc;color:#555}
td.PASS{color:#1b5e20;font-weight:600}td.FAIL{color:#b71c1c;font-weight:600}
"""


def esc(value: Any) -> str:
    """HTML-escaped text (``rmqemu report --compare`` builds its small page with it)."""
    return html.escape("" if value is None else str(value))


@dataclass
class Table:
    """A table for the template: header cells, rows of cells (text, or ``Markup`` for HTML),
    which columns are numeric (right-aligned), and the sentence shown when it has no rows."""

    headers: Sequence[str]
    rows: list[Sequence[Any]]
    numeric: Sequence[bool] = ()
    empty: str = "None."
    caption: str = ""
    title: str = ""
    limit: int = MAX_ROWS
    shown: list[Sequence[Any]] = field(init=False)
    more: int = field(init=False)

    def __post_init__(self) -> None:
        self.numeric = list(self.numeric) or [False] * len(self.headers)
        self.shown, self.more = self.rows[:self.limit], max(0, len(self.rows) - self.limit)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[bool] | None = None,
          limit: int = MAX_ROWS, empty: str = "None.", title: str = "", caption: str = "") -> Table:
    """A :class:`Table`; rows beyond ``limit`` are left out with a note (metrics.json and the
    Parquet tables have them all)."""
    return Table(headers, list(rows), numeric or (), empty, caption, title, limit)


# ---- the fault table: one line per column -------------------------------------------------------

Cell = Callable[[dict[str, Any], float], Any]


def _swatch(f: dict[str, Any], _scale: float) -> Markup:
    return Markup("<span class=sw style='background:{}'></span>{}").format(fault_colour(f["index"]), f["fault_id"])


def _window(f: dict[str, Any], scale: float) -> str:
    return fmt_ms(f["window_ms"], scale) + ("" if f.get("has_end") else " (no fault.end: until run end)")


def _ms(key: str) -> Cell:
    return lambda f, scale: fmt_ms(f.get(key), scale)


def _num(key: str) -> Cell:
    return lambda f, _scale: fmt_num(f.get(key))


def _text(key: str) -> Cell:
    return lambda f, _scale: f.get(key)


def _names(key: str) -> Cell:
    return lambda f, _scale: ", ".join(f.get(key) or [])


#: The fault table's columns in order: (header, cell of a staleness.faults row, numeric). A
#: column for a new key of the fault rows is one line here, e.g. ``("RTO", _ms("rto_ms"), True)``.
FAULT_COLUMNS: list[tuple[str, Cell, bool]] = [
    ("fault", _swatch, False),
    ("kind", _text("fault"), False),
    ("targets", _names("targets"), False),
    ("starts after", _ms("start_offset_ms"), True),
    ("window", _window, True),
    ("converged after", _ms("converged_ms"), True),
    ("stale views", _num("stale_views"), True),
    ("RTO", _ms("rto_ms"), True),  # docs/design.md §9: the longest unavailability starting in the attribution window
    ("failed sends", _num("failed_sends"), True),
    ("misrouted sends", _num("misrouted_sends"), True),
    ("delayed or timed messages late", _num("late_deliveries"), True),  # due in the window, late or never delivered
]


def _faults(m: Metrics) -> Table:
    scale = m["scale"]
    rows = [{**f, "index": i, "window_ms": f["end_offset_ms"] - f["start_offset_ms"]}
            for i, f in enumerate(m["staleness"]["faults"])]
    return table([h for h, _, _ in FAULT_COLUMNS], ([cell(f, scale) for _, cell, _ in FAULT_COLUMNS] for f in rows),
                 [n for _, _, n in FAULT_COLUMNS], empty="No faults were injected in this run.")


def _staleness(rows: list[dict[str, Any]], who: str, scale: float, title: str, caption: str = "") -> Table:
    rows = sorted(rows, key=lambda r: (-r["stale_ms"], r[who], r["topic"]))
    return table([who, "topic", "stale", "over", "under", "intervals", "longest", "measured"],
                 ([holder_label(r, who), r["topic"], fmt_ms(r["stale_ms"], scale), fmt_ms(r["stale_over_ms"], scale),
                   fmt_ms(r["stale_under_ms"], scale), fmt_num(r["intervals"]), fmt_ms(r["max_ms"], scale),
                   fmt_ms(r["measured_ms"], scale)] for r in rows),
                 [False, False, True, True, True, True, True, True], title=title, caption=caption)


def _details(m: Metrics) -> list[Table]:
    """The detail sections, in page order; a section with two tables repeats its title once."""
    scale = m["scale"]
    mo = m["misrouted"].get("by_reason_outcome", {})
    ac = m.get("autocreate", [])
    sne = m["subscriptions"]["subscription_not_exist"]["by_consumer"]
    nsq = [r for r in m["subscriptions"]["non_subscriber_queues"]["by_group"] if r["unowned_queues"]]
    return [
        _staleness(m["staleness"]["clients"], "client", scale, "Client staleness per (client, topic)"),
        _staleness(m["staleness"]["namesrvs"], "namesrv", scale, "Namesrv staleness per (namesrv, topic)",
                   "The route a producer would build from the namesrv's latest ns.route."),
        table(["reason", "outcome", "sends"], ([r, o, fmt_num(n)] for r, oc in sorted(mo.items())
                                                for o, n in sorted(oc.items())), [False, False, True],
              title="Misrouted sends by reason and outcome"),
        table(["topic", "created on", "hosted on", "masters with auto-create", "of them hosting"],
              ([r["topic"], ", ".join(r["created_on"]), ", ".join(r["hosted_on"]), ", ".join(r["auto_masters"]),
                f"{r['of_auto_masters']} of {len(r['auto_masters'])}"] for r in ac),
              title="Auto-created topics (the TBW102 imbalance)"),
        table(["topic", "acked", "consumed", "lost", "gone with their consumers", "dead-lettered", "retrying",
               "still delayed", "duplicated", "consumed but never acked"],
              ([r["topic"], *[fmt_num(r[k]) for k in ("acked", "consumed", "lost", "gone", "dead_lettered", "retrying",
                                                       "delayed", "duplicate_messages", "consumed_unacked")]]
               for r in m["consumption"]["by_topic"]),
              [False] + [True] * 9, empty="No acked or consumed messages.", title="Consumption per topic"),
        *[table(**t) for t in delay_tables(m) + timed_table(m)],
        *_order(m),
        *[table(**t) for t in failover_tables(m)],
        *[table(**t) for t in transaction_tables(m) + pop_tables(m)],
        table(["consumer", "group", "topic", "SUBSCRIPTION_NOT_EXIST pulls"],
              ([r["node"], r["group"], r["topic"], fmt_num(r["pulls"])] for r in sne),
              empty="No SUBSCRIPTION_NOT_EXIST pulls.", title="Subscriptions"),
        table(["group", "topic", "subscribers", "non-subscribers", "queues to non-subscribers"],
              ([r["group"], r["topic"], ", ".join(r["subscribers"]), ", ".join(r["non_subscribers"]),
                fmt_num(r["unowned_queues"])] for r in nsq),
              empty="No queue was allocated to a consumer that does not subscribe its topic."),
    ]


def _order(m: Metrics) -> list[Table]:
    """The order section (docs/design.md §7 "Order"): the checker per group, then the route
    changes that moved keys and the failed ordered sends when there are any."""
    o, scale = m.get("order") or {}, m["scale"]
    counts = ("units", "violated", "messages", "consumed", "out_of_order", "duplicates", "remapped", "handover",
              "redelivery", "unheld")
    out = [table(["group", "checked by", "keys or queues", "violated", "messages", "consumed", "out of order",
                  "duplicates", "remapped", "handover", "redelivery", "unheld deliveries"],
                 ([r["group"], r["by"], *[fmt_num(r[k]) for k in counts]] for r in o.get("groups", [])),
                 [False, False] + [True] * len(counts), title="Order per orderly consumer group",
                 empty="No group consumed orderly (an orderly consumer says orderly: true, a real client takes "
                       "queue locks): nothing to check.",
                 caption="Per key: each acked ordered message's first consumption against its key's send order; per "
                         "queue (no key known: a real client's messages): in offset order. Cause, first match: "
                         "remapped (the key's queue changed between the two sends), handover (two consumers held "
                         "the queue at overlapping times), redelivery. Unheld deliveries (left out): a real "
                         "client's from a queue it held no lock on then, answers to pulls it gave up.")]
    changes = (o.get("remaps") or {}).get("changes") or []
    if changes:
        out.append(table(["producer", "topic", "at", "route before", "after", "queues", "stale before",
                          "stale after", "keys moved", "out of order"],
                         ([c["producer"], c["topic"], fmt_ms(c["offset_ms"], scale), ", ".join(c["before"] or []),
                           ", ".join(c["after"] or []), f"{fmt_num(c['queues_before'])} -> "
                           f"{fmt_num(c['queues_after'])}",
                           c["stale_before"], c["stale_after"], fmt_num(c["keys"]), fmt_num(c["out_of_order"])]
                          for c in changes), [False, False, True, False, False, True, False, False, True, True],
                         title="Route changes that moved sharding keys"))
    failed = o.get("failed_sends") or {}
    if failed.get("total"):
        rows = [[f"target {r.replace('_', ' ')}", fmt_num(n)] for r, n in failed["by_reason"].items() if n]
        rows += [["no route", fmt_num(failed["no_route"])], ["made while the route was stale",
                                                             fmt_num(failed["stale_route"])],
                 ["all failed ordered sends", fmt_num(failed["total"])]]
        out.append(table(["ordered sends (no retry on another queue)", "attempts"], rows, [False, True],
                         title="Failed ordered sends"))
    return out


@dataclass
class Banner:
    """What the page opens with: ``state`` PASS, FAIL or NONE (no expectations), the rules'
    source, the verdicts, and a problem that kept them from being judged."""

    state: str
    source: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    problem: str = ""

    @property
    def failed(self) -> int:
        return sum(not v.passed for v in self.verdicts)


def banner(m: Metrics, expect: Expectations | None) -> Banner:
    if expect is None or not expect.rules:
        return Banner("NONE")
    try:
        verdicts = judge(expect.rules, m, expect.source)
    except ExpectationError as exc:  # a path this run's metrics lack: the CLI exits 2 on it too
        return Banner("FAIL", expect.source, problem=str(exc))
    return Banner("PASS" if all(v.passed for v in verdicts) else "FAIL", expect.source, verdicts)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("rmqemu.reports", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=fmt_num, ms=fmt_ms)
    return env


def render(m: Metrics, figures: list[Figure], out_dir: Path, notes: list[str], tables: list[str],
           expect: Expectations | None = None) -> str:
    """The whole page as a string; PNGs are read from ``out_dir`` and embedded. ``expect``: the
    rules this run is judged by (None: the page says it has no expectations)."""
    bad = m["bad_lines"]
    if bad["total"]:
        files = ", ".join(f"{Path(f).name}: {n}" for f, n in bad["by_file"].items())
        notes = [f"{bad['total']} unreadable line(s) were skipped ({files}); a killed node may leave a "
                 "truncated last line."] + notes
    images = [(fig, base64.b64encode((out_dir / fig.file).read_bytes()).decode("ascii")) for fig in figures]
    return _environment().get_template("report.html.j2").render(
        m=m, title=f"rmqemu report: {m.get('name') or m['run']}", css=Markup(CSS + VERDICT_CSS),
        banner=banner(m, expect), timing_warning=timing_health(m) if (m.get("timing") or {}).get("healthy") is False
        else "", notes=notes, summary=headline_rows(m), faults=_faults(m), images=images, details=_details(m),
        tables=tables) + "\n"
