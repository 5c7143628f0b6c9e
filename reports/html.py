"""``report/report.html``: one self-contained page (plots embedded as base64 PNG).

Order follows what a reader asks first: the summary table of headline numbers, then the
faults with their windows and convergence, then the plots, then the detail tables and the
definitions. Every duration is shown in wall ms and in cluster seconds. The page needs no
network, script or other file: it can be mailed or attached to an issue as it is.
"""
from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from reports.plots import Figure, fault_colour
from reports.summary import Metrics, fmt_ms, fmt_num, headline_rows, timing_health

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


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[bool] | None = None,
          limit: int = MAX_ROWS) -> str:
    """An HTML table; cells are escaped unless given as ``Markup``; rows beyond ``limit``
    are left out with a note (metrics.json and the Parquet tables have them all)."""
    rows = list(rows)
    numeric = numeric or [False] * len(headers)
    out = ["<table><tr>", *[f"<th>{esc(h)}</th>" for h in headers], "</tr>"]
    for r in rows[:limit]:
        cells = [f"<td{' class=num' if n else ''}>{c if isinstance(c, Markup) else esc(c)}</td>"
                 for c, n in zip(r, numeric)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    if len(rows) > limit:
        out.append(f"<p class=note>{len(rows) - limit:,} more rows in metrics.json.</p>")
    return "".join(out)


class Markup(str):
    """A string that is already HTML."""


def _summary(m: Metrics) -> str:
    out = ["<table><tr><th>what</th><th>value</th></tr>"]
    section = None
    for sec, label, value in headline_rows(m):
        if sec != section:
            out.append(f"<tr class=sec><td colspan=2>{esc(sec)}</td></tr>")
            section = sec
        out.append(f"<tr><td>{esc(label)}</td><td class=num>{esc(value)}</td></tr>")
    return "".join(out) + "</table>"


def _faults(m: Metrics) -> str:
    faults = m["staleness"]["faults"]
    if not faults:
        return "<p>No faults were injected in this run.</p>"
    scale = m["scale"]
    rows = []
    for i, f in enumerate(faults):
        window = f["end_offset_ms"] - f["start_offset_ms"]
        rows.append([Markup(f"<span class=sw style='background:{fault_colour(i)}'></span>{esc(f['fault_id'])}"),
                     f["fault"], ", ".join(f.get("targets") or []), fmt_ms(f["start_offset_ms"], scale),
                     fmt_ms(window, scale) + ("" if f.get("has_end") else " (no fault.end: until run end)"),
                     fmt_ms(f["converged_ms"], scale), fmt_num(f["stale_views"])])
    return table(["fault", "kind", "targets", "starts after", "window", "converged after", "stale views"], rows,
                 [False, False, False, True, True, True, True])


def _staleness_rows(rows: list[dict[str, Any]], who: str, scale: float) -> str:
    rows = sorted(rows, key=lambda r: (-r["stale_ms"], r[who], r["topic"]))
    return table([who, "topic", "stale", "over", "under", "intervals", "longest", "measured"],
                 ([r[who], r["topic"], fmt_ms(r["stale_ms"], scale), fmt_ms(r["stale_over_ms"], scale),
                   fmt_ms(r["stale_under_ms"], scale), fmt_num(r["intervals"]), fmt_ms(r["max_ms"], scale),
                   fmt_ms(r["measured_ms"], scale)] for r in rows),
                 [False, False, True, True, True, True, True, True])


def _details(m: Metrics) -> str:
    scale = m["scale"]
    parts = ["<h2>Client staleness per (client, topic)</h2>", _staleness_rows(m["staleness"]["clients"], "client", scale),
             "<h2>Namesrv staleness per (namesrv, topic)</h2>",
             "<p class=cap>The route a producer would build from the namesrv's latest ns.route.</p>",
             _staleness_rows(m["staleness"]["namesrvs"], "namesrv", scale)]
    mo = m["misrouted"].get("by_reason_outcome", {})
    parts += ["<h2>Misrouted sends by reason and outcome</h2>",
              table(["reason", "outcome", "sends"], ([r, o, fmt_num(n)] for r, oc in sorted(mo.items())
                                                      for o, n in sorted(oc.items())), [False, False, True])
              if mo else "<p>None.</p>"]
    ac = m.get("autocreate", [])
    parts += ["<h2>Auto-created topics (the TBW102 imbalance)</h2>",
              table(["topic", "created on", "hosted on", "masters with auto-create", "of them hosting"],
                    ([r["topic"], ", ".join(r["created_on"]), ", ".join(r["hosted_on"]), ", ".join(r["auto_masters"]),
                      f"{r['of_auto_masters']} of {len(r['auto_masters'])}"] for r in ac)) if ac else "<p>None.</p>"]
    cons = m["consumption"]["by_topic"]
    parts += ["<h2>Consumption per topic</h2>",
              table(["topic", "acked", "consumed", "lost", "duplicated", "consumed but never acked"],
                    ([r["topic"], *[fmt_num(r[k]) for k in ("acked", "consumed", "lost", "duplicate_messages",
                                                             "consumed_unacked")]] for r in cons),
                    [False] + [True] * 5) if cons else "<p>No acked or consumed messages.</p>"]
    sne = m["subscriptions"]["subscription_not_exist"]["by_consumer"]
    nsq = [r for r in m["subscriptions"]["non_subscriber_queues"]["by_group"] if r["unowned_queues"]]
    parts += ["<h2>Subscriptions</h2>",
              table(["consumer", "group", "topic", "SUBSCRIPTION_NOT_EXIST pulls"],
                    ([r["node"], r["group"], r["topic"], fmt_num(r["pulls"])] for r in sne)) if sne
              else "<p>No SUBSCRIPTION_NOT_EXIST pulls.</p>",
              table(["group", "topic", "subscribers", "non-subscribers", "queues to non-subscribers"],
                    ([r["group"], r["topic"], ", ".join(r["subscribers"]), ", ".join(r["non_subscribers"]),
                      fmt_num(r["unowned_queues"])] for r in nsq)) if nsq
              else "<p>No queue was allocated to a consumer that does not subscribe its topic.</p>"]
    return "".join(parts)


DEFINITIONS = """<h2>Definitions</h2><ul>
<li><b>Truth</b> for a topic at time t: the brokers whose master is alive (node.start to node.exit), not paused
(SIGSTOP) and hosts the topic (a writable broker.topic line in its current life).</li>
<li><b>View</b>: the brokers of a client's latest client.route for the topic; <b>stale</b> while view != truth,
<b>over</b> when it lists a broker truth has not, <b>under</b> when it misses one (a moment that is both counts in
both and once in the total).</li>
<li><b>Converged after</b>: from a fault's start to the end of the last client stale interval overlapping the window
up to the next fault's start (0 if none).</li>
<li><b>Misrouted send</b>: an attempt whose target broker node was, first match wins: dead, paused, partitioned from
the producer, not the master, without the topic (and unable to auto-create it), or given a queue id at or beyond
its write queues.</li>
<li>Times are host wall ms; cluster seconds = wall seconds / timing.scale.</li></ul>"""


def render(m: Metrics, figures: list[Figure], out_dir: Path, notes: list[str], tables: list[str]) -> str:
    """The whole page as a string; PNGs are read from ``out_dir`` and embedded."""
    title = f"rmqemu report: {m.get('name') or m['run']}"
    head = (f"<h1>{esc(title)}</h1><p class=sub>run <code>{esc(m['run'])}</code> &middot; seed {esc(m.get('seed'))}"
            f" &middot; timing.scale {esc(m['scale'])} &middot; {fmt_ms(m['duration_ms'], m['scale'])} observed"
            f" &middot; {fmt_num(m['events'])} events</p>")
    bad = m["bad_lines"]
    if bad["total"]:
        files = ", ".join(f"{Path(f).name}: {n}" for f, n in bad["by_file"].items())
        notes = [f"{bad['total']} unreadable line(s) were skipped ({files}); a killed node may leave a "
                 "truncated last line."] + notes
    warn = ([f"<p class=note><b>Timing: {esc(timing_health(m))}</b></p>"]
            if (m.get("timing") or {}).get("healthy") is False else [])
    body = [head, *warn, *[f"<p class=note>{esc(n)}</p>" for n in notes], "<h2>Summary</h2>", _summary(m),
            "<h2>Faults</h2>", _faults(m)]
    for fig in figures:
        data = base64.b64encode((out_dir / fig.file).read_bytes()).decode("ascii")
        body.append(f"<h2>{esc(fig.title)}</h2><p class=cap>{esc(fig.caption)}</p>"
                    f"<img alt='{esc(fig.title)}' src='data:image/png;base64,{data}'>")
    body.append(_details(m))
    body.append(DEFINITIONS)
    body.append("<h2>Files</h2><p>Next to this page: <code>metrics.json</code>, the plots as PNG, and the derived "
                "tables as Parquet under <code>parquet/</code> (read with <code>pandas.read_parquet</code> or "
                "<code>spark.read.parquet</code>): " + ", ".join(f"<code>{esc(t)}</code>" for t in tables) + ".</p>")
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")
