"""Delayed messages of one run (docs/design.md §7 "Delays and retries"): each entry a master
parked in ``SCHEDULE_TOPIC_XXXX``, whether and when it reached its real topic, judged on time,
late or early against its due time in true (host) time, or still pending at the end; per topic,
and per fault (the late ones due in its attribution window).

An entry is ``(broker, level, offset)``: its ``delay.park`` line and its ``delay.deliver`` lines
(more than one after a master restart: the same entry delivered again). Its **lateness** is the
broker's own (``lateness_ms``: its clock at delivery minus ``due_ms``, cluster ms, measured at
the store and delivery instants themselves, not when the lines were written) minus the change of
the broker's clock offset between the park and the delivery (``local_ms - ts`` of each line,
host ms, divided by the scale): a master whose clock was set while it held the message (a clock
fault) delivers early or late in true time, and that is what the user sees. A constant offset
cancels out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqemu.reports.core.transactions import codes

#: The kinds this module reads (written by masters), and ``send`` for the delay level asked.
DELAY_KINDS: tuple[str, ...] = ("delay.park", "delay.deliver")
#: The columns it reads of them.
DELAY_COLUMNS: tuple[str, ...] = ("ts", "node", "kind", "seq", "local_ms", "msg_id", "topic", "broker", "level",
                                  "offset", "due_ms", "delay_ms", "lateness_ms", "reconsume_times", "outcome",
                                  "delay_level")
#: On time: delivered within this many cluster ms of the due time, either way (docs/design.md §7).
TOLERANCE_MS = 1000.0
#: The statuses of an entry, in the order of the per-topic columns.
STATUSES: tuple[str, ...] = ("on_time", "late", "early", "pending")
#: The per-topic columns, in order.
TOPIC_COLUMNS: tuple[str, ...] = ("topic", "sent", "parked", "delivered", *STATUSES, "overdue", "redelivered",
                                  "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms", "lateness_min_ms")
_KEY = ["broker", "level", "offset"]


def delay_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """What step 2 passes on of a node's lines: its ``delay.park`` / ``delay.deliver`` lines
    and its ok sends that asked for a delay level."""
    sent = (ev["kind"] == "send") & (ev["outcome"] == "ok").fillna(False) & (ev["delay_level"] > 0).fillna(False)
    return ev.loc[ev["kind"].isin(DELAY_KINDS) | sent, [c for c in DELAY_COLUMNS if c in ev.columns]]


def _skew(df: pd.DataFrame) -> pd.Series:
    """The writer's clock offset at each line, host ms (0 where ``local_ms`` is missing)."""
    return (df["local_ms"] - df["ts"]).fillna(0.0).astype(float)


def entries(lines: pd.DataFrame, scale: float) -> pd.DataFrame:
    """One row per parked entry: ``broker, level, offset, msg_id, topic, reconsume_times,
    deliveries, parked`` (a ``delay.park`` line was read), ``delivered_at`` (the first delivery's
    ``ts``), ``lateness_ms`` (true lateness of the
    first delivery, WALL ms; NaN while pending), ``due`` (host ms: the first delivery's ``ts``
    less its lateness, else the park's ``ts`` plus the scaled delay, which is at most the park
    line's write lag late), ``status`` (:data:`STATUSES`)."""
    cols = ["broker", "level", "offset", "msg_id", "topic", "reconsume_times", "deliveries", "parked",
            "lateness_ms", "due", "status", "delivered_at"]
    lines = lines.loc[lines["broker"].notna() & lines["level"].notna() & lines["offset"].notna()]
    parks = lines.loc[lines["kind"] == "delay.park"].sort_values(["ts", "seq"])
    parks = parks.assign(_skew=_skew(parks)).drop_duplicates(_KEY)
    dl = lines.loc[lines["kind"] == "delay.deliver"].sort_values(["ts", "seq"])
    dl = dl.assign(_skew=_skew(dl), deliveries=dl.groupby(_KEY)["ts"].transform("size"))
    dl = dl.drop_duplicates(_KEY)
    if parks.empty and dl.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("broker", "msg_id", "topic", "status") else float)
                             for c in cols})
    p = parks[[*_KEY, "msg_id", "topic", "reconsume_times", "ts", "delay_ms", "_skew"]]
    d = dl[[*_KEY, "msg_id", "topic", "reconsume_times", "ts", "lateness_ms", "_skew", "deliveries"]]
    out = park_join(p, d, _KEY, ("msg_id", "topic", "reconsume_times"), scale)
    late = out["lateness_ms"]
    out["due"] = np.where(out["deliveries"] > 0, out["ts_d"] - late, out["ts"] + out["delay_ms"] * scale)
    tol = TOLERANCE_MS * scale
    out["status"] = np.select([out["deliveries"] == 0, late > tol, late < -tol], ["pending", "late", "early"],
                              "on_time")
    return out[cols].sort_values(_KEY).reset_index(drop=True)


def park_join(parks: pd.DataFrame, first: pd.DataFrame, key: list[str], carried: tuple[str, ...],
              scale: float) -> pd.DataFrame:
    """Each entry's park line and first delivery (``key``), outer-joined: the ``carried`` columns
    from whichever line has them, ``parked``, ``delivered_at``, ``deliveries`` (0 when none) and
    ``lateness_ms`` in true time, wall ms: the broker's own less the change of its clock offset
    (``_skew``) between the park and the delivery."""
    out = parks.merge(first, on=key, how="outer", suffixes=("", "_d"))
    for col in carried:
        out[col] = out[col].where(out[col].notna(), out[f"{col}_d"])
    out["parked"] = out["ts"].notna()
    out["delivered_at"] = out["ts_d"]
    out["deliveries"] = out["deliveries"].fillna(0).astype(np.int64)
    shift = (out["_skew_d"] - out["_skew"].fillna(out["_skew_d"])) / scale  # cluster ms the clock moved
    out["lateness_ms"] = ((out["lateness_ms"] - shift) * scale).astype(float)
    return out


def undelivered(ent: pd.DataFrame, until: float | None) -> pd.Series:
    """The ids of the messages producers sent with a delay level (not retries) that had not
    reached their topic by ``until`` (``run.stop``; None: by the end)."""
    first = ent.loc[(ent["reconsume_times"] == 0).fillna(False).to_numpy(dtype=bool)]
    late = first["delivered_at"].isna() if until is None else ~(first["delivered_at"] < until).fillna(False)
    return first.loc[late.to_numpy(dtype=bool), "msg_id"].dropna().reset_index(drop=True)


def _percentiles(v: np.ndarray) -> tuple[float, float, float, float]:
    if not len(v):
        return (np.nan,) * 4
    p50, p99 = np.percentile(v, [50, 99], method="linear")
    return float(p50), float(p99), float(v.max()), float(v.min())


def by_topic(ent: pd.DataFrame, lines: pd.DataFrame, scale: float, until: float) -> pd.DataFrame:
    """:data:`TOPIC_COLUMNS` per topic (real topic: a retry's is ``%RETRY%<group>``): ``sent``
    distinct messages an ok send asked a delay for, entries ``parked`` (with a ``delay.park``),
    ``delivered``, by status, ``overdue`` (pending though due more than the tolerance before
    ``until``, the measured end), ``redelivered`` (deliveries past each entry's first), and the
    first deliveries' lateness in wall ms (signed: negative is early; null without one)."""
    sends = lines.loc[lines["kind"] == "send", ["topic", "msg_id"]].dropna()
    sends = sends.assign(_m=codes(sends["msg_id"])).drop_duplicates(["topic", "_m"])  # ids may differ after a NUL
    sent = sends.groupby("topic").size()
    topics = sorted(set(sent.index) | set(ent["topic"].dropna()))
    rows = []
    for t in topics:
        e = ent.loc[ent["topic"] == t]
        status = e["status"].value_counts()
        pending = e["status"] == "pending"
        done = e.loc[~pending]
        rows.append((t, int(sent.get(t, 0)), int(e["parked"].sum()), len(done),
                     *(int(status.get(s, 0)) for s in STATUSES),
                     int((pending & (e["due"] + TOLERANCE_MS * scale < until)).sum()),
                     int((done["deliveries"] - 1).sum()), *_percentiles(done["lateness_ms"].to_numpy(dtype=float))))
    out = pd.DataFrame(rows, columns=list(TOPIC_COLUMNS))
    ints = {c: np.int64 for c in TOPIC_COLUMNS[1:-4]}
    return out.astype({"topic": object, **ints, **{c: float for c in TOPIC_COLUMNS[-4:]}})


def totals(ent: pd.DataFrame, per_topic: pd.DataFrame) -> pd.DataFrame:
    """One row: the per-topic counts summed, the lateness over every first delivery."""
    done = ent.loc[ent["status"] != "pending", "lateness_ms"].to_numpy(dtype=float)
    counts = {c: int(per_topic[c].sum()) for c in TOPIC_COLUMNS[1:-4]}
    p50, p99, mx, mn = _percentiles(done)
    return pd.DataFrame([{**counts, "lateness_p50_ms": p50, "lateness_p99_ms": p99, "lateness_max_ms": mx,
                          "lateness_min_ms": mn}])


def fault_lateness(rows: pd.DataFrame, ent: pd.DataFrame, scale: float, until: float) -> pd.DataFrame:
    """``late_deliveries`` per fault row (``start``, ``impact_end``: its attribution window, host
    ms): entries (``due``, ``status``, ``lateness_ms``: delayed ones, and the caller adds timed
    ones) due in the window and delivered late, or still pending though due more than the
    tolerance before ``until``; ``late_max_ms``: the latest of those delivered (0 if none)."""
    tol = TOLERANCE_MS * scale
    due = ent["due"].to_numpy(dtype=float)
    late = (ent["status"] == "late").to_numpy(dtype=bool)
    stuck = ((ent["status"] == "pending") & (ent["due"] + tol < until)).to_numpy(dtype=bool)
    lateness = ent["lateness_ms"].to_numpy(dtype=float)
    counts, worst = [], []
    for lo, hi in zip(rows["start"].to_numpy(dtype=float), rows["impact_end"].to_numpy(dtype=float), strict=True):
        inside = (due >= lo) & (due < hi)
        counts.append(int((inside & (late | stuck)).sum()))
        worst.append(float(lateness[inside & late].max()) if (inside & late).any() else 0.0)
    return rows.assign(late_deliveries=np.array(counts, dtype=np.int64), late_max_ms=np.array(worst, dtype=float))
