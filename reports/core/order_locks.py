"""Who held an orderly queue when (docs/design.md §7 "Order"): the hold intervals of each
consumer on each queue, whether two deliveries came from consumers holding the queue at
overlapping times (a *handover*), and which deliveries a real client had from a queue it did not
hold (*unheld*: answers to pulls it gave up, which it drops).

A consumer's hold of a queue, from its own ``orderly.lock`` lines (the lock that lets it
consume): from ``locked`` to its next ``expired`` (dated ``ts - late_ms x scale``: the line is
written when the expiry is noticed), ``refused``, ``dropped`` or ``unlocked``, else to the end
of the consumer's life (its ``node.exit``), else the run end.

A holder without such lines (a real client, ``client@<pid>``) is seen from the broker's
``broker.lock`` lines, where it is the ``peer``: from its ``locked`` / ``taken_over`` to its
``unlocked``, or another holder's ``taken_over``. A broker's lock table lives in memory only, so
its ``node.exit`` ends every hold it granted; the client's own lock outlives it by up to
:data:`CLIENT_LOCK_MS` (30 s after the last grant, which came before the exit), so such a hold
lasts until the exit plus that, or the holder's next hold of the queue. Holds are disjoint per
(group, queue, holder).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from rmqemu.reports.core.sends import point_lookup

#: The lock kinds of rmqemu/event_order.py.
BROKER_LOCK, ORDERLY_LOCK = "broker.lock", "orderly.lock"
LOCK_KINDS: tuple[str, ...] = (BROKER_LOCK, ORDERLY_LOCK)
#: The columns of the lock lines the checker reads.
LOCK_COLUMNS: tuple[str, ...] = ("ts", "seq", "node", "kind", "group", "topic", "broker", "queue_id", "peer",
                                 "change", "late_ms")
#: A real client's local lock after its last grant, wall ms: ``ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME``
#: (30 s; a real client keeps wall time, docs/design.md §5 "Real clients").
CLIENT_LOCK_MS = 30_000.0
#: A queue: its topic, broker name and id.
QUEUE = ["topic", "broker", "queue_id"]
HOLD_COLUMNS = ["group", *QUEUE, "holder", "start", "end"]


def lock_lines(ev: pd.DataFrame) -> pd.DataFrame:
    """The ``broker.lock`` and ``orderly.lock`` lines of ``ev``, :data:`LOCK_COLUMNS` only."""
    return ev.loc[ev["kind"].isin(LOCK_KINDS).to_numpy(bool), list(LOCK_COLUMNS)].reset_index(drop=True)


def _consumer_holds(lines: pd.DataFrame, scale: float) -> list[tuple]:
    rows: list[tuple] = []
    keys = ["group", *QUEUE, "node"]
    lines = lines.dropna(subset=keys).sort_values(["ts", "seq"], kind="stable")
    for key, g in lines.groupby(keys, sort=False):
        since = None
        for ts, change, late in zip(g["ts"], g["change"], g["late_ms"], strict=True):
            if change == "locked":
                since = ts if since is None else since
            elif since is not None:
                end = ts - (0.0 if pd.isna(late) else float(late)) * scale if change == "expired" else ts
                rows.append((*key, since, max(end, since)))
                since = None
        if since is not None:
            rows.append((*key, since, np.inf))
    return rows


def _broker_holds(lines: pd.DataFrame, exits: pd.DataFrame) -> list[tuple]:
    """``(group, topic, broker, queue_id, holder, start, end)`` from one run's ``broker.lock``
    lines; ``exits``: ``node, ts`` of the brokers' exits."""
    rows: list[tuple] = []
    keys = ["group", *QUEUE, "node"]
    lines = lines.dropna(subset=[*keys, "peer"])
    for key, g in lines.groupby(keys, sort=False):
        ends = exits.loc[exits["node"] == key[-1], "ts"].to_numpy(float)
        marks = sorted([(float(t), s, "", str(p), str(c)) for t, s, p, c in
                        zip(g["ts"], g["seq"], g["peer"], g["change"], strict=True)]
                       + [(float(t), -1, "exit", "", "") for t in ends])
        holder, since = None, 0.0
        for ts, _, what, peer, change in marks:
            if what == "exit":
                if holder is not None:
                    rows.append((*key[:-1], holder, since, ts + CLIENT_LOCK_MS))
                holder = None
            elif change in ("locked", "taken_over") and peer != holder:
                if holder is not None:
                    rows.append((*key[:-1], holder, since, ts))
                holder, since = peer, ts
            elif change == "unlocked" and peer == holder:
                rows.append((*key[:-1], holder, since, ts))
                holder = None
        if holder is not None:
            rows.append((*key[:-1], holder, since, np.inf))
    return rows


def broker_seen(locks: pd.DataFrame) -> set[tuple[str, str]]:
    """``(group, holder)`` of the holders seen only from ``broker.lock`` lines (real clients): a
    ``peer`` with no ``orderly.lock`` line of its own in that group."""
    own = locks[(locks["kind"] == ORDERLY_LOCK).to_numpy(bool)]
    peers = locks[(locks["kind"] == BROKER_LOCK).to_numpy(bool)].dropna(subset=["group", "peer"])
    return set(zip(peers["group"], peers["peer"], strict=True)) - set(zip(own["group"], own["node"], strict=True))


def _pairs_in(group: pd.Series, node: pd.Series, pairs: set[tuple[str, str]]) -> np.ndarray:
    return np.array([(g, n) in pairs for g, n in zip(group, node, strict=True)], dtype=bool)


def unheld(held: Callable[[], pd.DataFrame], locks: pd.DataFrame, dl: pd.DataFrame, run_end: float) -> np.ndarray:
    """For each delivery of ``dl`` (``group, node, ts, topic, broker, queue_id``; a ``consume``
    line will do, its messages share these): whether it went to a holder seen from the broker's
    lock lines (:func:`broker_seen`) while it held no lock on that queue (``held()``:
    :func:`holds`, asked for only when some delivery went to such a holder; a hold still open at
    ``run_end`` includes it). An orderly client consumes only from a queue it holds: such a
    delivery answers a pull it gave up when a rebalance took the queue away (the broker still
    answers it, the client drops it) or that outlived its lock, and was never consumed. The one
    definition of *unheld*: the order checker and the consumption duplicates both leave these
    out (docs/design.md §7)."""
    pairs = broker_seen(locks)
    seen = _pairs_in(dl["group"], dl["node"], pairs) if pairs else np.zeros(len(dl), dtype=bool)
    if not seen.any():
        return seen
    h = held()
    h = h.assign(end=np.where(h["end"].to_numpy(float) >= run_end, np.inf, h["end"].to_numpy(float)))
    at = dl[seen]
    found, _, _ = _hold(h, at["group"].to_numpy(object), at["node"].to_numpy(object), at["ts"].to_numpy(float),
                        [at[c].astype(object).to_numpy(object) for c in QUEUE])
    seen[np.flatnonzero(seen)[found]] = False
    return seen


def holds(locks: pd.DataFrame, lives: pd.DataFrame, scale: float, run_end: float) -> pd.DataFrame:
    """``group, topic, broker, queue_id, holder, start, end``: every hold (module docstring)."""
    own = locks[(locks["kind"] == ORDERLY_LOCK).to_numpy(bool)]
    mine = pd.DataFrame(_consumer_holds(own, scale), columns=HOLD_COLUMNS)
    if len(mine):  # a consumer's exit ends its holds
        _, life_end = point_lookup(mine["start"].to_numpy(float), [mine["holder"].to_numpy(object)], lives,
                                   ["node"], "end")
        mine["end"] = np.fmin(mine["end"].to_numpy(float), life_end)
    ended = lives[lives["end"].to_numpy(float) < run_end]
    seen = pd.DataFrame(_broker_holds(locks[(locks["kind"] == BROKER_LOCK).to_numpy(bool)],
                                      pd.DataFrame({"node": ended["node"], "ts": ended["end"]})), columns=HOLD_COLUMNS)
    seen = seen.loc[_pairs_in(seen["group"], seen["holder"], broker_seen(locks))]
    seen = seen.sort_values([*HOLD_COLUMNS[:5], "start"], kind="stable").reset_index(drop=True)
    if len(seen):  # an extended hold ends where the holder's next hold of the queue begins
        same = (seen[HOLD_COLUMNS[:5]].astype(object).shift(-1) == seen[HOLD_COLUMNS[:5]].astype(object)).all(axis=1)
        nxt = np.where(same.to_numpy(bool), seen["start"].shift(-1).to_numpy(float), np.inf)
        seen["end"] = np.fmin(seen["end"].to_numpy(float), nxt)
    out = pd.concat([mine, seen], ignore_index=True) if len(mine) and len(seen) else (seen if len(seen) else mine)
    out["end"] = np.fmin(out["end"].to_numpy(float), float(run_end)) if len(out) else out["end"]
    return out.astype({"start": float, "end": float}).reset_index(drop=True)


def _hold(h: pd.DataFrame, group: np.ndarray, node: np.ndarray, ts: np.ndarray,
          queue: Iterable[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(found, start, end)`` of the hold of ``node`` on ``queue`` holding each ``ts``."""
    keys = [group, node, *queue]
    cols = ["group", "holder", *QUEUE]
    found, start = point_lookup(ts, keys, h, cols, "start")
    _, end = point_lookup(ts, keys, h, cols, "end")
    return found, start, end


def _eq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x == y`` per item, False where either is null."""
    return np.array([bool(u == v) if pd.notna(u) and pd.notna(v) else False for u, v in zip(x, y, strict=True)],
                    dtype=bool)


def handover(h: pd.DataFrame, group: np.ndarray, a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    """For each pair of deliveries ``a[i]``, ``b[i]`` (``node, ts, topic, broker, queue_id``) of
    ``group[i]``: whether two consumers made them from one queue while their holds of it
    overlapped."""
    def arr(df: pd.DataFrame, col: str) -> np.ndarray:
        return df[col].astype(object).to_numpy(object)
    qa, qb = [arr(a, c) for c in QUEUE], [arr(b, c) for c in QUEUE]
    na, nb = arr(a, "node"), arr(b, "node")
    two = ~_eq(na, nb) & pd.notna(na) & pd.notna(nb)
    for x, y in zip(qa, qb, strict=True):
        two &= _eq(x, y)
    fa, sa, ea = _hold(h, group, na, a["ts"].to_numpy(float), qa)
    fb, sb, eb = _hold(h, group, nb, b["ts"].to_numpy(float), qb)
    with np.errstate(invalid="ignore"):
        return two & fa & fb & (sa < eb) & (sb < ea)
