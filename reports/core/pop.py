"""POP consumption of one run (docs/design.md §7 "POP consumption", docs/rocketmq-model.md §10.2,
§10.3): the masters' leases, acks, renewals and revives (``pop.*``) and the proxies' answers to gRPC
clients (``proxy.ack``, ``proxy.change_invisible``, ``proxy.dlq``), joined by (group, ``msg_id``):
a revived copy keeps the UNIQ_KEY.

A *lease* is a ``pop.lease`` line: one hand-out of a message to a group. A message of a group
*needed* as many deliveries as it has leases (a renewal is no new lease); its lease *expired and
was redelivered* when a ``pop.revive`` put it back (``retry`` or, FIFO, ``redelivered``) or a later
lease of it has a higher ``attempt``. The FIFO order check is :func:`fifo_violations`.

Step 2 passes on each node's lines of :data:`POP_KINDS` and its ok sends that name a message group
(:func:`pop_lines`); step 3 counts them (:mod:`reports.core.pop_run`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqemu.reports.core.transactions import codes

#: The kinds this module reads: the brokers' and the proxies' (``proxy.tx_check`` is the
#: transactions section's business).
POP_KINDS: tuple[str, ...] = ("pop.lease", "pop.ack", "pop.change_invisible", "pop.revive", "proxy.ack",
                              "proxy.change_invisible", "proxy.dlq")
#: The columns read of them and of ``send`` lines.
POP_COLUMNS: tuple[str, ...] = ("ts", "node", "kind", "seq", "msg_id", "group", "topic", "broker", "queue_id",
                                "retry", "fifo", "queue_offset", "attempt", "pop_time", "result", "sharding_key",
                                "outcome")
#: ``pop.ack`` results (docs/events.md), in the section's order.
BROKER_ACK_RESULTS: tuple[str, ...] = ("ok", "stale", "no_order_info", "slave", "not_written", "malformed",
                                       "topic_not_exist", "illegal_queue", "no_message", "not_out")
#: ``proxy.ack`` results; ``code_<n>`` (the broker refused) is counted as ``refused``.
PROXY_ACK_RESULTS: tuple[str, ...] = ("ok", "expired", "invalid", "no_broker", "timeout", "refused")
#: A ``pop.revive`` result that puts the message back for another lease.
REVIVED: tuple[str, ...] = ("retry", "redelivered")
#: A broker's ``pop.ack`` result that acked the message (a FIFO ack the order info was lost for
#: still moves the pop offset past it).
ACKED: tuple[str, ...] = ("ok", "no_order_info")
#: FIFO violations, per message.
VIOLATIONS: tuple[str, ...] = ("out_of_order", "unacked_previous")
#: The columns of :func:`fifo_violations`.
VIOLATION_COLUMNS: tuple[str, ...] = ("group", "message_group", "msg_id", "violation", "ts", "earlier")


def pop_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """What step 2 passes on of a node's lines: its :data:`POP_KINDS` lines and its ok sends with a
    ``sharding_key`` (a FIFO message's group, or a 4.x ordered send's key)."""
    keyed = ((ev["kind"] == "send") & (ev["outcome"] == "ok") & ev["sharding_key"].notna()).fillna(False)
    mask = ev["kind"].isin(POP_KINDS).to_numpy(bool) | keyed.to_numpy(bool)
    return ev.loc[mask, [c for c in POP_COLUMNS if c in ev.columns]]


def of_kind(lines: pd.DataFrame, kind: str) -> pd.DataFrame:
    """``lines`` of one kind, in (ts, seq) order."""
    return lines.loc[(lines["kind"] == kind).to_numpy(bool)].sort_values(["ts", "seq"], kind="stable")


def _is(s: pd.Series, values: tuple[str, ...]) -> np.ndarray:
    return s.isin(values).to_numpy(bool)


def messages(lines: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, message) leased: ``group, msg_id, leases, max_attempt, redelivered``
    (revived, or leased again with a higher attempt), ``acked`` (a ``pop.ack`` of :data:`ACKED`)."""
    leases = of_kind(lines, "pop.lease").dropna(subset=["msg_id"])
    if leases.empty:
        return pd.DataFrame({"group": pd.Series(dtype=object), "msg_id": pd.Series(dtype=object),
                             **{c: pd.Series(dtype=np.int64) for c in ("leases", "max_attempt")},
                             "redelivered": pd.Series(dtype=bool), "acked": pd.Series(dtype=bool)})
    key = pd.Series(codes(leases["group"]) * (len(leases) + 1)) + codes(leases["msg_id"])  # NUL-safe pair code
    leases = leases.assign(_k=key.to_numpy())
    att = leases["attempt"].astype("Int64").fillna(1).astype(np.int64)
    g = leases.assign(_a=att.to_numpy()).groupby("_k", sort=False)
    out = pd.DataFrame({"group": g["group"].first(), "msg_id": g["msg_id"].first(), "leases": g.size(),
                        "max_attempt": g["_a"].max(), "_min": g["_a"].min()}).reset_index(drop=True)

    def pairs(df: pd.DataFrame) -> set[tuple[str, str]]:
        return set(zip(df["group"], df["msg_id"], strict=True))
    revives = of_kind(lines, "pop.revive")
    revived = pairs(revives.loc[_is(revives["result"], REVIVED)].dropna(subset=["msg_id"]))
    acks = of_kind(lines, "pop.ack")
    acked = pairs(acks.loc[_is(acks["result"], ACKED)].dropna(subset=["msg_id"]))
    pair = list(zip(out["group"], out["msg_id"], strict=True))
    out["redelivered"] = (out["max_attempt"] > out.pop("_min")).to_numpy(bool) | np.array(
        [p in revived for p in pair], dtype=bool)
    out["acked"] = np.array([p in acked for p in pair], dtype=bool)
    return out.astype({"leases": np.int64, "max_attempt": np.int64})


def proxy_ack_result(results: pd.Series) -> pd.Series:
    """A ``proxy.ack`` result as counted: ``code_<n>`` is ``refused``."""
    return results.where(~results.astype(str).str.startswith("code_"), "refused")


def _send_order(lines: pd.DataFrame) -> pd.DataFrame:
    """``topic, message_group, msg_id, rank``: each message's first ok send with a ``sharding_key``,
    ranked in send order per (topic, key): one producer sends a key's messages in sequence."""
    s = of_kind(lines, "send").dropna(subset=["msg_id", "sharding_key"])
    s = s.assign(_m=codes(s["msg_id"])).drop_duplicates("_m")
    s = s.assign(rank=s.groupby(pair_codes(s["topic"], s["sharding_key"]), sort=False).cumcount())
    return s[["topic", "sharding_key", "msg_id", "rank"]].rename(columns={"sharding_key": "message_group"})


def pair_codes(a: pd.Series, b: pd.Series) -> np.ndarray:
    """One NUL-safe integer per (a, b) pair (:func:`codes`): what to group two string columns by."""
    return codes(a) * (len(a) + 1) + codes(b)


def fifo_violations(lines: pd.DataFrame) -> pd.DataFrame:
    """:data:`VIOLATION_COLUMNS`: the FIFO groups' order violations, at most one of each kind per
    (group, message). A FIFO group's deliveries are its ``pop.lease`` lines with ``fifo`` true, in
    (ts, seq) order; a message's send order is its message group's (:func:`_send_order`).

    - ``out_of_order``: its first delivery came before the first delivery of a message sent
      before it (``earlier``: of those, the one delivered last); a message never delivered is not
      compared.
    - ``unacked_previous``: a lease of it came while the message sent just before it (``earlier``)
      had no ack (:data:`ACKED`) yet and was not handed out earlier in the same pop (same broker
      node and ``pop_time``): 5.x blocks a queue until the previous message is acked or its
      lease runs out, and hands the expired one out again first."""
    leases = of_kind(lines, "pop.lease")
    leases = leases.loc[leases["fifo"].fillna(False).to_numpy(bool)].dropna(subset=["msg_id"])
    order = _send_order(lines)
    if leases.empty or order.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c == "ts" else object) for c in VIOLATION_COLUMNS})
    leases = leases.reset_index(drop=True).assign(pos_=np.arange(len(leases)))
    # every join and grouping below over NUL-safe codes or Python dicts, never pandas' string hashing
    sent = {(t, m): (mg, r) for t, mg, m, r in order.itertuples(index=False)}
    found = [sent.get((t, m)) for t, m in zip(leases["topic"], leases["msg_id"], strict=True)]
    keep = np.array([f is not None for f in found], dtype=bool)
    dl = leases.drop(columns=["sharding_key"], errors="ignore").loc[keep]
    dl = dl.assign(message_group=[f[0] for f in found if f is not None], rank=[f[1] for f in found if f is not None])
    acks = of_kind(lines, "pop.ack")
    acks = acks.loc[_is(acks["result"], ACKED)].dropna(subset=["msg_id"])
    first_ack: dict[tuple[object, object], float] = {}
    for g, m, t in zip(acks["group"], acks["msg_id"], acks["ts"].astype(float), strict=True):
        first_ack[(g, m)] = min(t, first_ack.get((g, m), np.inf))
    ranks: dict[tuple[object, object], dict[int, object]] = {}
    for topic, mg, msg, rank in order.itertuples(index=False):
        ranks.setdefault((topic, mg), {})[rank] = msg
    rows: list[tuple[object, ...]] = []
    if dl.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c == "ts" else object) for c in VIOLATION_COLUMNS})
    dl = dl.assign(_g=codes(dl["group"]), _t=codes(dl["topic"]), _k=codes(dl["message_group"]), _m=codes(dl["msg_id"]))
    for _, d in dl.groupby(["_g", "_t", "_k"], sort=False):
        group, topic, mg = d["group"].iloc[0], d["topic"].iloc[0], d["message_group"].iloc[0]
        d = d.sort_values("pos_", kind="stable")
        first = d.drop_duplicates("_m").sort_values("rank", kind="stable")
        pos, ids, at = first["pos_"].to_numpy(), first["msg_id"].to_numpy(object), first["ts"].to_numpy(float)
        latest = 0  # of the messages sent so far, the one first delivered last
        for i in range(1, len(pos)):
            if pos[latest] > pos[i]:
                rows.append((group, mg, ids[i], "out_of_order", float(at[i]), ids[latest]))
            elif pos[i] > pos[latest]:
                latest = i
        by_rank = ranks[(topic, mg)]
        in_pop: dict[tuple[object, object, object], int] = {}
        for r in d.itertuples(index=False):
            in_pop.setdefault((r.node, r.pop_time, r.msg_id), r.pos_)
        seen: set[object] = set()
        for r in d.itertuples(index=False):
            prev = by_rank.get(r.rank - 1)
            if prev is None or r.msg_id in seen:
                continue
            handed = in_pop.get((r.node, r.pop_time, prev))
            if not first_ack.get((group, prev), np.inf) < r.ts and not (handed is not None and handed < r.pos_):
                rows.append((group, mg, r.msg_id, "unacked_previous", float(r.ts), prev))
                seen.add(r.msg_id)
    out = pd.DataFrame(rows, columns=list(VIOLATION_COLUMNS))
    return out.astype({"ts": float}).sort_values(["ts", "violation"], kind="stable").reset_index(drop=True)
