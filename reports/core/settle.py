"""Loss that only means loss (docs/design.md §7 "Consumption"): what became of each acked message
a group never consumed, and the consumption tables without the broker's own copies.

An acked message (first acked before ``run.stop``) that a group never consumed is, first match
wins:

- ``dead_lettered``: the group gave up on it (a ``retry.back`` to ``%DLQ%``, or dropped);
- ``retrying``: the group had it and failed it (``reconsume_later``, or a ``retry.back``), and no
  retry was consumed by the end;
- ``delayed``: sent with a delay level, it had not reached its topic by ``run.stop`` (still
  parked, or delivered during the shutdown: the drain does not wait for parked messages);
- ``gone``: the group's consumers had all left by ``run.stop`` (:func:`gone_groups`): a real
  client stopping before the end, whose end rmqemu does not drain. A run without ``run.stop``
  has no group gone: its shutdown, where every consumer leaves, cannot be told apart;
- ``lost``: the rest: the group was still consuming and never had it.

Per topic the same holds for messages no group consumed (``dead_lettered`` / ``retrying`` by any
group; ``gone`` when every group subscribing the topic had gone). Deliveries from ``%RETRY%`` and
``%DLQ%`` topics are retries (:mod:`reports.core.retries`): they count as their message consumed
(by its first id, :func:`reports.core.retries.root_ids`), never as a topic's own consumption or
as consumed but never acked; a client's own send to ``%RETRY%`` is a retry, not a message.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core.consumers import subscriptions
from rmqemu.reports.core.retries import GIVEN_UP, is_broker_made, root_ids

#: What became of a never-consumed message, first match wins (the columns added to consumption).
FATES: tuple[str, ...] = ("dead_lettered", "retrying", "delayed", "gone", "lost")


def gone_groups(lines: pd.DataFrame, lives: pd.DataFrame, at: float) -> set[str]:
    """The consumer groups whose consumers had all left at ``at`` (``run.stop``): some
    ``broker.consumer`` line said one of them left, and on every broker node alive at ``at``
    the group's latest line of that life, if any, leaves ``remaining`` 0. A group without
    ``broker.consumer`` lines (an older run) is never gone."""
    m = lines.loc[(lines["kind"] == "broker.consumer") & (lines["ts"] <= at)].dropna(subset=["group", "node"])
    if m.empty:
        return set()
    left = set(m.loc[m["change"] == "left", "group"])
    life = lives.loc[(lives["start"] <= at) & (lives["end"] >= at)].drop_duplicates("node", keep="last")
    start = m["node"].map(life.set_index("node")["start"])
    known = m["node"].isin(lives["node"]).to_numpy(dtype=bool)
    # a broker known to have died or restarted since holds nothing of its earlier life
    now = ~known | (start.notna() & (m["ts"] >= start)).to_numpy(dtype=bool)
    last = m.loc[now].sort_values(["ts", "seq"]).drop_duplicates(["node", "group"], keep="last")
    present = set(last.loc[(last["remaining"] > 0).fillna(False).to_numpy(dtype=bool), "group"])
    return left - present


def _deliveries(con: pd.DataFrame, col: str, back: pd.DataFrame) -> pd.DataFrame:
    """``group, msg``: a row per message id of list column ``col`` of ``consume`` lines (repeats
    kept: only membership is asked), as its root id."""
    ex = con[["group", col]].explode(col).dropna()
    return pd.DataFrame({"group": ex["group"].astype(object).to_numpy(),
                         "msg": root_ids(ex[col].astype(object), back).to_numpy()})


class Fates:
    """The never-consumed acked messages of a run and what became of them (see the module
    docstring), per (group, topic) and per topic."""

    def __init__(self, consumer_lines: pd.DataFrame, sends: pd.DataFrame, retry_lines: pd.DataFrame,
                 lives: pd.DataFrame, until: float | None, delayed: pd.Series | None = None) -> None:
        """``until``: ``run.stop`` (None: none); ``delayed``: the ids of
        the messages not delivered from ``SCHEDULE_TOPIC_XXXX`` to their topic by ``run.stop``
        (:func:`reports.core.delays.undelivered`)."""
        back = retry_lines.loc[retry_lines["kind"] == "retry.back"]
        ok = sends.loc[(sends["outcome"] == "ok").fillna(False).to_numpy(dtype=bool) & ~is_broker_made(sends["topic"])]
        ok = ok.dropna(subset=["topic", "msg_id"]).sort_values(["ts", "seq"])
        ok = ok.loc[~pd.Series(list(zip(ok["topic"], ok["msg_id"], strict=True)), dtype=object).duplicated().to_numpy()]
        stopped = until is not None and not np.isnan(until)
        if stopped:
            ok = ok.loc[ok["ts"] < until]
        self.acked = pd.DataFrame({"topic": ok["topic"].astype(object).to_numpy(),
                                   "msg": ok["msg_id"].astype(object).to_numpy()})
        con = consumer_lines.loc[consumer_lines["kind"] == "consume"]
        self.consumed = _deliveries(con, "msg_ids", back)
        failed = _deliveries(con, "reconsume_later", back) if "reconsume_later" in con else self.consumed.iloc[:0]
        sent_back = pd.DataFrame({"group": back["group"].astype(object).to_numpy(),
                                  "msg": root_ids(back["msg_id"], back).to_numpy()})
        self.handled = pd.concat([failed, sent_back], ignore_index=True).dropna()
        given_up = back["outcome"].isin(GIVEN_UP).to_numpy(dtype=bool)
        self.given_up = sent_back.loc[given_up].dropna()
        self.gone = gone_groups(retry_lines, lives, float(until)) if stopped else set()
        self.delayed = pd.DataFrame({"group": None, "msg": (pd.Series(dtype=object) if delayed is None
                                                             else delayed.astype(object)).to_numpy()})
        self.subs = subscriptions(consumer_lines)
        self.watched = set(consumer_lines.loc[consumer_lines["kind"].isin(("consume", "rebalance")), "topic"].dropna())
        # message ids as integer codes over one dictionary: the lookups below are array indexing. Arrow's,
        # not pd.factorize: pandas hashes a column of strings as C strings (so do its multi-column
        # drop_duplicates, and groupby), and "\x00" and "\x00p" (user data, docs/design.md §6) would be one
        tables = [self.acked, self.consumed, self.handled, self.given_up, self.delayed]
        msgs = pd.concat([t["msg"] for t in tables], ignore_index=True).astype(object)
        encoded = pc.dictionary_encode(pa.array(msgs, type=pa.string(), from_pandas=True))
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        ids = encoded.dictionary.to_pylist()
        bounds = np.cumsum([0, *(len(t) for t in tables)])
        for t, lo, hi in zip(tables, bounds[:-1], bounds[1:], strict=True):
            t["code"] = codes[lo:hi]
        self._n, self._ids = len(ids), np.asarray(ids, dtype=object)
        self._tables: dict[tuple[str, str | None], np.ndarray] = {}

    def _among(self, msgs: np.ndarray, name: str, group: str | None = None) -> np.ndarray:
        """Whether each message code is one of table ``name``'s (of ``group``, or of any group)."""
        key = (name, group)
        if key not in self._tables:
            pairs = getattr(self, name)
            if group is not None:
                pairs = pairs.loc[(pairs["group"] == group).to_numpy(dtype=bool)]
            table = np.zeros(self._n + 1, dtype=bool)  # index -1: a null id, never a member
            table[pairs["code"].to_numpy()] = True
            table[-1] = False
            self._tables[key] = table
        return self._tables[key][msgs]

    def _topic(self, topic: str) -> np.ndarray:
        """The codes of the acked messages of ``topic``."""
        return self.acked.loc[(self.acked["topic"] == topic).to_numpy(dtype=bool), "code"].to_numpy()

    def _fates(self, msgs: np.ndarray, group: str | None, gone: bool) -> dict[str, int]:
        """Counts per fate of the never-consumed ``msgs``."""
        dead = self._among(msgs, "given_up", group)
        trying = ~dead & self._among(msgs, "handled", group)
        waiting = ~dead & ~trying & self._among(msgs, "delayed")
        left = ~dead & ~trying & ~waiting
        return {"dead_lettered": int(dead.sum()), "retrying": int(trying.sum()), "delayed": int(waiting.sum()),
                "gone": int(left.sum()) if gone else 0, "lost": 0 if gone else int(left.sum())}

    def per_group(self, group: str, topic: str) -> dict[str, int]:
        """``consumed`` (of the acked messages of ``topic``, by ``group`` under any topic) and the
        fates of the rest."""
        msgs = self._topic(topic)
        had = self._among(msgs, "consumed", group)
        return {"consumed": int(had.sum()), **self._fates(msgs[~had], group, group in self.gone)}

    def lost(self, group: str, topic: str) -> np.ndarray:
        """The ids of the acked messages of ``topic`` that ``group`` lost: what :meth:`per_group`
        counts as ``lost`` (the failover section names them, :mod:`reports.core.failover_run`)."""
        if group in self.gone:
            return self._ids[:0]
        msgs = self._topic(topic)
        msgs = msgs[~self._among(msgs, "consumed", group)]
        left = ~self._among(msgs, "given_up", group) & ~self._among(msgs, "handled", group) & \
            ~self._among(msgs, "delayed")
        return self._ids[msgs[left]]

    def per_topic(self, topic: str) -> dict[str, int]:
        """The fates of the acked messages of ``topic`` no group consumed (none unless some group
        consumed or rebalanced ``topic``)."""
        msgs = self._topic(topic)
        if topic not in self.watched:
            msgs = msgs[:0]
        msgs = msgs[~self._among(msgs, "consumed")]
        groups = set(self.subs.loc[self.subs["topic"] == topic, "group"])
        return self._fates(msgs, None, bool(groups) and groups <= self.gone)


def consumption(table: pd.DataFrame, fates: Fates) -> pd.DataFrame:
    """The per-topic consumption table without broker-made topics, its ``lost`` split into
    :data:`FATES`."""
    out = table.loc[~is_broker_made(table["topic"])].reset_index(drop=True)
    return _with_fates(out, [fates.per_topic(t) for t in out["topic"]])


def group_loss(table: pd.DataFrame, fates: Fates) -> pd.DataFrame:
    """The per-(group, topic) loss table without broker-made topics, ``consumed`` counted by
    first id and the rest split into :data:`FATES`."""
    out = table.loc[~is_broker_made(table["topic"])].reset_index(drop=True)
    got = [fates.per_group(g, t) for g, t in zip(out["group"], out["topic"], strict=True)]
    out["consumed"] = np.array([g["consumed"] for g in got], dtype=np.int64)
    return _with_fates(out, got)


def _with_fates(out: pd.DataFrame, got: list[dict[str, int]]) -> pd.DataFrame:
    for fate in FATES:
        out[fate] = np.array([g[fate] for g in got], dtype=np.int64)
    return out
