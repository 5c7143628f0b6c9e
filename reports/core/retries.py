"""Retries of one run (docs/design.md §7 "Delays and retries"): the messages consumers failed
and the broker took back (``retry.back``), by reconsumeTimes, and those parked in the DLQ.

A message keeps one id through its retries with a UNIQ_KEY (rmqemu's clients, the Java
client); ali-ons sets none, so each retry copy has a new id: a ``retry.back`` names the copy it
took back (``msg_id``) and the copy it stored (``offset_msg_id``), and the copy's delivery from
``SCHEDULE_TOPIC_XXXX`` is consumed under the stored copy's id. :func:`root_ids` follows those
links back to the id the message was first acked with.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

#: The kinds this module and :mod:`reports.core.settle` read (written by brokers).
RETRY_KINDS: tuple[str, ...] = ("retry.back", "broker.consumer")
#: The columns they read of them (and of ``consume``: ``reconsume_later``).
RETRY_COLUMNS: tuple[str, ...] = ("ts", "node", "kind", "seq", "group", "topic", "msg_id", "offset_msg_id",
                                  "reconsume_times", "outcome", "level", "via", "change", "remaining",
                                  "reconsume_later")
#: Topics of broker-made copies: a group's retry topic and its dead-letter queue.
RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"
#: Outcomes of a ``retry.back`` that end the message's retries.
GIVEN_UP: tuple[str, ...] = ("dlq", "dropped")
#: The columns of :func:`by_reconsume_times`.
TIMES_COLUMNS: tuple[str, ...] = ("group", "topic", "reconsume_times", "retried", "dead_lettered", "dropped")
_MAX_HOPS = 64  # a message is retried at most maxReconsumeTimes (16 by default, 2**31 - 1 at most) times


def retry_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """What step 2 passes on of a node's lines: its ``retry.back`` and ``broker.consumer`` lines."""
    return ev.loc[ev["kind"].isin(RETRY_KINDS), [c for c in RETRY_COLUMNS if c in ev.columns]]


def is_broker_made(topic: pd.Series) -> np.ndarray:
    """Whether each topic is a ``%RETRY%`` or ``%DLQ%`` topic (null: no); judged once per name."""
    codes, names = pd.factorize(topic.astype(object))
    made = np.array([isinstance(n, str) and n.startswith((RETRY_PREFIX, DLQ_PREFIX)) for n in names] + [False])
    return made[codes]


def backs(lines: pd.DataFrame) -> pd.DataFrame:
    """The ``retry.back`` lines, in ``(ts, seq)`` order."""
    return lines.loc[lines["kind"] == "retry.back"].sort_values(["ts", "seq"]).reset_index(drop=True)


def root_ids(ids: pd.Series, back: pd.DataFrame) -> pd.Series:
    """Each id as the id its message was first acked with: a stored retry copy's id
    (``offset_msg_id`` of a ``retry.back``) is replaced by the id of the copy it was taken back
    from, until none is left (an id no retry made is its own root)."""
    links = back.loc[back["offset_msg_id"].notna() & back["msg_id"].notna()]
    links = links.loc[links["offset_msg_id"] != links["msg_id"]].drop_duplicates("offset_msg_id")
    parent = pd.Series(links["msg_id"].to_numpy(dtype=object), index=links["offset_msg_id"].to_numpy(dtype=object))
    out = ids.astype(object)
    for _ in range(_MAX_HOPS):
        up = out.map(parent)
        if not up.notna().any():
            break
        out = up.where(up.notna(), out)
    return out


def by_reconsume_times(back: pd.DataFrame) -> pd.DataFrame:
    """:data:`TIMES_COLUMNS`: per (group, original topic, reconsumeTimes of the new copy), the
    messages taken back to ``%RETRY%`` (``retried``), to ``%DLQ%`` (``dead_lettered``) and
    ``dropped`` (the group has no retry queue)."""
    keys = ["group", "topic", "reconsume_times"]
    b = back.dropna(subset=keys)
    out = pd.crosstab([b[k] for k in keys], b["outcome"]) if len(b) else pd.DataFrame()
    out = out.reindex(columns=["retry", "dlq", "dropped"], fill_value=0).reset_index() if len(b) else \
        pd.DataFrame({k: pd.Series(dtype=object) for k in keys}).assign(retry=0, dlq=0, dropped=0)
    out = out.rename(columns={"retry": "retried", "dlq": "dead_lettered"})
    return out[list(TIMES_COLUMNS)].astype({"group": object, "topic": object, "reconsume_times": np.int64,
                                             "retried": np.int64, "dead_lettered": np.int64, "dropped": np.int64})


def dead_letters(back: pd.DataFrame) -> pd.DataFrame:
    """``group, topic, messages``: the distinct messages (by :func:`root_ids`) each group's
    retries parked in its ``%DLQ%`` topic, per original topic."""
    b = back.loc[(back["outcome"] == "dlq").to_numpy(dtype=bool)].dropna(subset=["group", "topic"])
    b = b.assign(_root=root_ids(b["msg_id"], back))
    out = b.drop_duplicates(["group", "topic", "_root"]).groupby(["group", "topic"]).size()
    return out.rename("messages").reset_index().astype({"group": object, "topic": object, "messages": np.int64})


def _items(lists: pd.Series) -> int:
    """The items of a list column, summed (a null list has none)."""
    if isinstance(lists.dtype, pd.ArrowDtype):
        return int(lists.list.len().fillna(0).sum())
    return sum(len(v) for v in lists if isinstance(v, (list, tuple, np.ndarray)))


def totals(back: pd.DataFrame, consumer_lines: pd.DataFrame) -> pd.DataFrame:
    """One row: ``taken_back`` (``retry.back`` lines), ``retried``, ``dead_lettered`` (distinct
    messages), ``dropped``, ``messages`` (distinct (group, message) ever taken back), ``via_send``
    (taken back through a client's own send to ``%RETRY%``) and ``deliveries`` (deliveries of
    broker-made copies: ``consume`` lines' messages from ``%RETRY%`` and ``%DLQ%`` topics)."""
    roots = root_ids(back["msg_id"], back)
    outcome = back["outcome"]
    con = consumer_lines.loc[consumer_lines["kind"] == "consume"]
    made = con.loc[is_broker_made(con["topic"]), "msg_ids"]
    return pd.DataFrame([{
        "taken_back": len(back), "retried": int((outcome == "retry").sum()),
        "dead_lettered": int(dead_letters(back)["messages"].sum()), "dropped": int((outcome == "dropped").sum()),
        "messages": int(pd.DataFrame({"g": back["group"], "r": roots}).drop_duplicates().shape[0]),
        "via_send": int((back["via"] == "send").sum()),
        "deliveries": _items(made),
    }])
