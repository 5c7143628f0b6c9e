"""Timed messages of one run (docs/design.md §7 "Delays and retries", docs/rocketmq-model.md §10.4):
each entry a master held on its timer wheel (``rmq_sys_wheel_timer``), whether and when it reached
its real topic, judged against the instant its producer asked for, or still parked at the end.

An entry is ``(broker, offset)``: its ``timer.park`` line and its ``timer.deliver`` lines (more
than one after a kill: the same entry delivered again). Its **lateness** is the first delivery's
in true time, as a delay level's (:mod:`reports.core.delays`): the broker's own ``lateness_ms``
(its clock at delivery minus ``deliver_ms``, the instant asked) less the change of its clock
offset between the park and the delivery, in wall ms. The wheel delivers at the end of the
instant's slot, so up to ``due_ms - deliver_ms`` (one ``timerPrecisionMs``) late is on time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqemu.reports.core.delays import TOLERANCE_MS, park_join
from rmqemu.reports.core.transactions import codes

#: The masters' kinds this module reads, and ``send`` for the instant a gRPC client asked.
TIMER_KINDS: tuple[str, ...] = ("timer.park", "timer.deliver")
#: The columns it reads of them.
TIMER_COLUMNS: tuple[str, ...] = ("ts", "node", "kind", "seq", "local_ms", "msg_id", "topic", "broker", "offset",
                                  "deliver_ms", "due_ms", "wait_ms", "lateness_ms", "immediate", "outcome")
#: Early: delivered more than this many wall ms before the instant asked, in true time (the slack
#: absorbs the noise of reading a line's clock offset; the wheel itself is never early).
EARLY_SLACK_MS = 1.0
#: The statuses of an entry, in the order of the per-topic columns.
STATUSES: tuple[str, ...] = ("on_time", "late", "early", "pending")
#: The per-topic columns, in order.
TOPIC_COLUMNS: tuple[str, ...] = ("topic", "sent", "parked", "delivered", *STATUSES, "immediate", "redelivered",
                                  "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms", "lateness_min_ms")
_KEY = ["broker", "offset"]
_ENTRY_COLUMNS = ("broker", "offset", "msg_id", "topic", "parked", "deliveries", "delivered_at", "lateness_ms",
                  "due", "immediate", "status")


def timer_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """What step 2 passes on of a node's lines: its :data:`TIMER_KINDS` lines and its ok sends that
    asked for a delivery instant (``deliver_ms``)."""
    sent = ((ev["kind"] == "send") & (ev["outcome"] == "ok") & ev["deliver_ms"].notna()).fillna(False)
    mask = ev["kind"].isin(TIMER_KINDS).to_numpy(bool) | sent.to_numpy(bool)
    return ev.loc[mask, [c for c in TIMER_COLUMNS if c in ev.columns]]


def entries(lines: pd.DataFrame, scale: float) -> pd.DataFrame:
    """One row per wheel entry: ``broker, offset, msg_id, topic, parked`` (a ``timer.park`` was
    read), ``deliveries``, ``delivered_at`` (the first delivery's ``ts``), ``lateness_ms`` (true
    lateness of the first delivery against the instant asked, wall ms; NaN while pending),
    ``due`` (host ms: the first delivery's ``ts`` less its lateness, else the park's ``ts`` plus
    its scaled ``wait_ms``; NaN for a park line without it), ``immediate`` (the first delivery
    found its slot passed), ``status`` (:data:`STATUSES`)."""
    lines = lines.loc[lines["broker"].notna() & lines["offset"].notna()]
    skew = (lines["local_ms"] - lines["ts"]).fillna(0.0).astype(float)
    lines = lines.assign(_skew=skew.to_numpy())
    parks = lines.loc[(lines["kind"] == "timer.park").to_numpy(bool)].sort_values(["ts", "seq"]).drop_duplicates(_KEY)
    dl = lines.loc[(lines["kind"] == "timer.deliver").to_numpy(bool)].sort_values(["ts", "seq"])
    dl = dl.assign(deliveries=dl.groupby(_KEY)["ts"].transform("size")).drop_duplicates(_KEY)
    if parks.empty and dl.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("broker", "msg_id", "topic", "status") else float)
                             for c in _ENTRY_COLUMNS})
    if "wait_ms" not in parks.columns:
        parks = parks.assign(wait_ms=np.nan)
    p = parks[[*_KEY, "msg_id", "topic", "ts", "_skew", "wait_ms"]]
    d = dl[[*_KEY, "msg_id", "topic", "ts", "_skew", "deliveries", "lateness_ms", "deliver_ms", "due_ms",
            "immediate"]]
    out = park_join(p, d, _KEY, ("msg_id", "topic"), scale)
    late = out["lateness_ms"]
    slot = ((out["due_ms"] - out["deliver_ms"]).clip(lower=0) * scale).astype(float)
    out["due"] = np.where(out["deliveries"] > 0, out["ts_d"] - late, out["ts"] + out["wait_ms"].astype(float) * scale)
    out["immediate"] = out["immediate"].fillna(False).astype(bool)
    out["status"] = np.select([out["deliveries"] == 0, late < -EARLY_SLACK_MS, late > slot + TOLERANCE_MS * scale],
                              ["pending", "early", "late"], "on_time")
    return out[list(_ENTRY_COLUMNS)].sort_values(_KEY).reset_index(drop=True)


def undelivered(ent: pd.DataFrame, until: float | None) -> pd.Series:
    """The ids of timed messages that had not reached their topic by ``until`` (None: the end)."""
    late = ent["delivered_at"].isna() if until is None else ~(ent["delivered_at"] < until).fillna(False)
    return ent.loc[late.to_numpy(bool), "msg_id"].dropna().reset_index(drop=True)


def _percentiles(v: np.ndarray) -> tuple[float, float, float, float]:
    if not len(v):
        return (np.nan,) * 4
    p50, p99 = np.percentile(v, [50, 99], method="linear")
    return float(p50), float(p99), float(v.max()), float(v.min())


def by_topic(ent: pd.DataFrame, lines: pd.DataFrame) -> pd.DataFrame:
    """:data:`TOPIC_COLUMNS` per real topic: ``sent`` (distinct messages an ok send asked an
    instant for), entries ``parked``, ``delivered``, by status, ``immediate`` (first delivered
    at once: a restart's backlog or a clock set forward), ``redelivered`` (deliveries past each
    entry's first), and the first deliveries' lateness in wall ms (negative is early)."""
    sends = lines.loc[(lines["kind"] == "send").to_numpy(bool), ["topic", "msg_id"]].dropna()
    sends = sends.assign(_m=codes(sends["msg_id"])).drop_duplicates(["topic", "_m"])  # ids may differ after a NUL
    sent = sends.groupby("topic").size()
    rows = []
    for t in sorted(set(sent.index) | set(ent["topic"].dropna())):
        e = ent.loc[(ent["topic"] == t).to_numpy(bool)]
        status = e["status"].value_counts()
        done = e.loc[(e["status"] != "pending").to_numpy(bool)]
        rows.append((t, int(sent.get(t, 0)), int(e["parked"].sum()), len(done),
                     *(int(status.get(s, 0)) for s in STATUSES), int(done["immediate"].sum()),
                     int((done["deliveries"] - 1).sum()), *_percentiles(done["lateness_ms"].to_numpy(float))))
    out = pd.DataFrame(rows, columns=list(TOPIC_COLUMNS))
    return out.astype({"topic": object, **{c: np.int64 for c in TOPIC_COLUMNS[1:-4]},
                       **{c: float for c in TOPIC_COLUMNS[-4:]}})


def totals(ent: pd.DataFrame, per_topic: pd.DataFrame) -> pd.DataFrame:
    """One row: the per-topic counts summed, the lateness over every first delivery."""
    done = ent.loc[(ent["status"] != "pending").to_numpy(bool), "lateness_ms"].to_numpy(float)
    counts = {c: int(per_topic[c].sum()) for c in TOPIC_COLUMNS[1:-4]}
    p50, p99, mx, mn = _percentiles(done)
    return pd.DataFrame([{**counts, "lateness_p50_ms": p50, "lateness_p99_ms": p99, "lateness_max_ms": mx,
                          "lateness_min_ms": mn}])
