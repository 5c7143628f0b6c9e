"""Transactional messages of one run (docs/design.md §7 "Transactions"): what became of each
one, from its half to its end, read from the masters' ``tx.*`` lines and the producers' ``send``
lines of halves, all joined by ``msg_id`` (the UNIQ_KEY, which the half, its check copies and the
committed message keep).

A message's **fate**, first match wins: ``committed`` (a ``tx.end`` that committed it, ``result``
ok), ``rolled_back`` (one that rolled it back, and none committed it), ``discarded`` (a
``tx.discard``), ``open`` (none of those by the end of the run). Its *deciding end* is the first
ok end of its fate's action; ``after_check`` when that end answered a check (``from_check``, or
it names a check's copy), else first-hand. 4.9.4's commit is not idempotent, so a message with two ok commits was stored
twice in its topic.

Step 2 passes on each node's lines of :data:`TX_KINDS` and its ``send`` lines of halves
(:func:`tx_lines`); step 3 makes one row per message of them (:func:`messages`, the Parquet table
``transactions``), which the section's metrics count (:mod:`reports.core.transactions_run`), and
reads a half as a message of the loss metrics only once committed (:func:`acks`).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

#: The masters' kinds this module reads (``tx.local``, the producer's decision, is not read: the
#: master's ``tx.end`` says what was done with it).
TX_KINDS: tuple[str, ...] = ("tx.half", "tx.end", "tx.check", "tx.discard")
#: The columns read of them and of ``send`` lines.
TX_COLUMNS: tuple[str, ...] = ("ts", "node", "kind", "seq", "msg_id", "group", "broker", "topic", "offset", "action",
                               "from_check", "result", "check_times", "client_id", "reason", "outcome", "transaction")
#: A message's fates, first match wins.
FATES: tuple[str, ...] = ("committed", "rolled_back", "discarded", "open")
#: Why a committed message was stored more than once: its ok commits by whether they answered a check.
CAUSES: tuple[str, ...] = ("first_hand_and_check", "checks_only", "first_hand_only")
#: ``tx.discard`` reasons.
DISCARD_REASONS: tuple[str, ...] = ("max_checks", "expired")
HALF = "half"

#: The columns of :func:`messages`.
MESSAGE_COLUMNS: tuple[str, ...] = (
    "msg_id", "group", "topic", "broker", "sent", "halves", "stored_at", "fate", "decided_at", "after_check",
    "checks", "commits", "first_commit", "cause", "discard_reason", "checked", "visible_ms", "life_start", "life_end")


def tx_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """What step 2 passes on of a node's lines: its :data:`TX_KINDS` lines and its ``send`` lines
    of halves (``transaction`` = ``half``)."""
    half = ((ev["kind"] == "send") & (ev["transaction"] == HALF)).fillna(False).to_numpy(bool)
    return ev.loc[ev["kind"].isin(TX_KINDS).to_numpy(bool) | half, [c for c in TX_COLUMNS if c in ev.columns]]


def _is(s: pd.Series, value: object) -> np.ndarray:
    return s.eq(value).fillna(False).to_numpy(bool)


def ok_ends(tx: pd.DataFrame, action: str | None = None) -> pd.DataFrame:
    """The ``tx.end`` lines that committed or rolled back a half (``result`` ok; ``action``: only
    that one), in (ts, seq) order."""
    ends = tx.loc[_is(tx["kind"], "tx.end") & _is(tx["result"], "ok")]
    ends = ends.loc[ends["action"].isin(("commit", "rollback") if action is None else (action,)).to_numpy(bool)]
    return ends.dropna(subset=["msg_id"]).sort_values(["ts", "seq"], kind="stable")


def committed_ids(tx: pd.DataFrame) -> set[str]:
    """The messages some ``tx.end`` committed."""
    return set(ok_ends(tx, "commit")["msg_id"])


def acks(sends: pd.DataFrame, tx: pd.DataFrame) -> pd.DataFrame:
    """``sends`` as the loss metrics read them (docs/design.md §7 "Consumption"): a half is a
    message only once committed, so the ok attempts of a half whose message no ``tx.end`` committed
    are no acks (their ``outcome`` reads ``uncommitted``). Other rows are as they were."""
    half = _is(sends["transaction"], HALF) & _is(sends["outcome"], "ok") if "transaction" in sends else None
    if half is None or not half.any():
        return sends
    never = half & ~sends["msg_id"].isin(committed_ids(tx)).to_numpy(bool)
    return sends.assign(outcome=sends["outcome"].where(~never, "uncommitted"))


def codes(values: pd.Series) -> np.ndarray:
    """Each value's code in one Arrow dictionary (null: -1): what this module keys, groups and counts
    messages by. Not pandas' ``factorize``, ``groupby``, ``unique`` or multi-column
    ``drop_duplicates`` over the strings: pandas hashes them as C strings, so two ids that differ
    only after a NUL (user data, docs/design.md §6) would be one message."""
    arr = pa.array(values.astype(object), type=pa.string(), from_pandas=True)
    return pc.fill_null(pc.dictionary_encode(arr).indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def distinct(values: pd.Series) -> int:
    """The distinct non-null values (see :func:`codes`)."""
    c = codes(values)
    return len(np.unique(c[c >= 0]))


def _first(df: pd.DataFrame, col: str) -> pd.Series:
    """``col`` of each message's first row with one (``df`` in (ts, seq) order), by message code."""
    got = df.dropna(subset=[col]).drop_duplicates("_m")
    return pd.Series(got[col].to_numpy(), index=got["_m"].to_numpy())


def _count(df: pd.DataFrame) -> pd.Series:
    return df.groupby("_m", sort=False).size()


def _causes(commits: pd.DataFrame) -> pd.Series:
    """Per message with two or more ok commits: its :data:`CAUSES` entry, by message code."""
    per = pd.DataFrame({"_m": commits["_m"].to_numpy(),
                        "check": commits["from_check"].fillna(False).astype(bool).to_numpy()}).groupby("_m")["check"]
    n, checks = per.size(), per.sum()
    twice = n[n >= 2].index
    cause = np.select([checks[twice] == n[twice], checks[twice] == 0], ["checks_only", "first_hand_only"],
                      "first_hand_and_check")
    return pd.Series(cause, index=twice, dtype=object)


def messages(tx: pd.DataFrame, run_end: float) -> pd.DataFrame:
    """One row per transactional message (a ``msg_id`` some master logged a ``tx.half``, an ok
    ``tx.end``, a ``tx.check`` or a ``tx.discard`` of): :data:`MESSAGE_COLUMNS`.

    ``sent``: a producer's half send of it was ok; ``halves``: ``tx.half`` lines (two: the producer
    retried a half whose first attempt was stored); ``stored_at``: the first; ``fate``
    (:data:`FATES`), ``decided_at`` (its deciding end, or its discard), ``after_check``; ``checks``:
    for a message decided after a check, the ``check_times`` of the check its deciding end answered
    (the ``tx.check`` of the same broker, half-queue offset and message), else the ``tx.check`` lines
    of it up to its deciding end (all of them when undecided); ``commits``: its ok commits,
    ``first_commit`` the first's ``ts``, ``cause`` (:data:`CAUSES`) when two or more; ``checked``:
    its ``tx.check`` lines; ``visible_ms``: from its ``tx.half`` on the first commit's broker (else
    its first) to that commit; ``life_start``/``life_end``: its first line to its last ok end or
    discard, to ``run_end`` while open."""
    tx = tx.dropna(subset=["msg_id"]).sort_values(["ts", "seq"], kind="stable")
    tx = tx.assign(_m=codes(tx["msg_id"]), _b=codes(tx["broker"]))
    kind = tx["kind"]
    halves, checks = tx.loc[_is(kind, "tx.half")], tx.loc[_is(kind, "tx.check")]
    discards, ends = tx.loc[_is(kind, "tx.discard")], ok_ends(tx)
    ends = ends.assign(from_check=_answers(ends, checks))
    commits, rollbacks = ends.loc[_is(ends["action"], "commit")], ends.loc[_is(ends["action"], "rollback")]
    mine = pd.concat([halves, ends, checks, discards]).sort_values(["ts", "seq"], kind="stable")
    at = pd.Series(pd.unique(mine["_m"].to_numpy(np.int64)), dtype=np.int64)
    out = pd.DataFrame({"msg_id": at.map(_first(mine, "msg_id")).astype(object)})
    sends = tx.loc[_is(kind, "send")]
    out["sent"] = at.isin(sends.loc[_is(sends["outcome"], "ok"), "_m"]).to_numpy(bool)
    out["group"] = at.map(_first(mine, "group")).astype(object)
    out["topic"] = at.map(_first(halves, "topic")).fillna(at.map(_first(commits, "topic"))).astype(object)
    out["halves"] = at.map(_count(halves)).fillna(0).astype(np.int64)
    out["stored_at"] = at.map(_first(halves, "ts")).astype(float)
    committed, rolled = at.isin(commits["_m"]).to_numpy(bool), at.isin(rollbacks["_m"]).to_numpy(bool)
    out["fate"] = np.select([committed, rolled, at.isin(discards["_m"]).to_numpy(bool)], list(FATES[:3]), "open")
    decide = pd.concat([commits.drop_duplicates("_m"),
                        rollbacks.loc[~rollbacks["_m"].isin(commits["_m"]).to_numpy(bool)].drop_duplicates("_m")])
    decide = decide.set_index("_m")
    out["broker"] = at.map(decide["broker"]).fillna(at.map(_first(halves, "broker"))).astype(object)
    decided_at = at.map(decide["ts"]).astype(float)
    out["after_check"] = at.map(decide["from_check"]).eq(True).to_numpy(bool)
    out["decided_at"] = decided_at.fillna(at.map(_first(discards, "ts")).astype(float)).to_numpy(float)
    out["checks"] = _checks(at, decide, checks, decided_at)
    out["commits"] = at.map(_count(commits)).fillna(0).astype(np.int64).to_numpy()
    out["first_commit"] = at.map(_first(commits, "ts")).astype(float).to_numpy()
    out["cause"] = at.map(_causes(commits)).astype(object).to_numpy()
    out["discard_reason"] = at.map(_first(discards, "reason")).astype(object).to_numpy()
    out["checked"] = at.map(_count(checks)).fillna(0).astype(np.int64).to_numpy()
    out["visible_ms"] = out["first_commit"].to_numpy(float) - _half_at(at, out["stored_at"], commits, halves)
    out["life_start"] = at.map(mine.groupby("_m")["ts"].min()).astype(float).to_numpy()
    last = pd.concat([ends, discards]).groupby("_m")["ts"].max()
    out["life_end"] = at.map(last).astype(float).fillna(float(run_end)).to_numpy()
    return out[list(MESSAGE_COLUMNS)]


def _answers(ends: pd.DataFrame, checks: pd.DataFrame) -> np.ndarray:
    """Per end: it answered a check, by its own word (``from_check``) or because it names a check's
    copy (the broker, half-queue offset and message of a ``tx.check``). A client need not say: the
    C++ client writes the flag as "1", which 4.9.4's ``Boolean.parseBoolean`` reads as false."""
    keys = ["_b", "offset", "_m"]
    asked = checks[keys].dropna().drop_duplicates().assign(_hit=True)
    named = ends[keys].merge(asked, on=keys, how="left")["_hit"].notna().to_numpy(bool)
    return ends["from_check"].fillna(False).astype(bool).to_numpy() | named


def _checks(at: pd.Series, decide: pd.DataFrame, checks: pd.DataFrame, decided_at: pd.Series) -> np.ndarray:
    """The ``checks`` column of :func:`messages` (``at``: the messages' codes)."""
    until = pd.Series(decided_at.fillna(np.inf).to_numpy(float), index=at.to_numpy())
    upto = checks["ts"].to_numpy(float) <= checks["_m"].map(until).to_numpy(float)
    n = at.map(_count(checks.loc[upto])).fillna(0).to_numpy(np.int64)
    answered = decide.loc[decide["from_check"].fillna(False).to_numpy(bool)].reset_index()
    keys = ["_b", "offset", "_m"]
    asked = checks.loc[(checks["_b"] >= 0).to_numpy(bool), [*keys, "check_times"]].dropna()
    found = answered[keys].dropna().merge(asked.drop_duplicates(keys, keep="last"), on=keys)
    times = at.map(pd.Series(found["check_times"].to_numpy(), index=found["_m"].to_numpy()))
    return np.where(times.notna().to_numpy(bool), times.fillna(0).to_numpy(np.int64), n).astype(np.int64)


def _half_at(at: pd.Series, stored_at: pd.Series, commits: pd.DataFrame, halves: pd.DataFrame) -> np.ndarray:
    """Per message: its first ``tx.half`` on the broker of its first commit, else its first."""
    first = commits.drop_duplicates("_m")[["_m", "_b"]]
    first = first.loc[(first["_b"] >= 0).to_numpy(bool)]
    on = first.merge(halves.drop_duplicates(["_m", "_b"])[["_m", "_b", "ts"]], on=["_m", "_b"])
    same = at.map(pd.Series(on["ts"].to_numpy(float), index=on["_m"].to_numpy()))
    return same.fillna(pd.Series(stored_at.to_numpy(float))).to_numpy(float)
def commit_acks(msgs: pd.DataFrame) -> pd.DataFrame:
    """One ok "attempt" per committed message at its first commit (``ts``, ``seq``, ``msg_id``,
    ``topic``, ``outcome``): what :class:`reports.core.settle.Fates` reads as acks, so the
    committed messages are judged as the loss metrics judge acked ones, dated by their commit."""
    c = msgs.loc[msgs["first_commit"].notna().to_numpy(bool)]
    return pd.DataFrame({"ts": c["first_commit"].to_numpy(float), "seq": np.arange(len(c), dtype=np.int64),
                         "msg_id": c["msg_id"].to_numpy(dtype=object), "topic": c["topic"].to_numpy(dtype=object),
                         "outcome": "ok"})


def percentiles(values: Iterable[float]) -> dict[str, float | int | None]:
    """``n, p50_ms, p90_ms, p99_ms, max_ms, mean_ms`` (linear, as the send latency's; null without
    a value)."""
    v = np.asarray([x for x in values if not np.isnan(x)], dtype=float)
    if not len(v):
        return {"n": 0, "p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None, "mean_ms": None}
    p50, p90, p99 = np.percentile(v, [50, 90, 99], method="linear")
    return {"n": len(v), "p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99), "max_ms": float(v.max()),
            "mean_ms": float(v.mean())}
