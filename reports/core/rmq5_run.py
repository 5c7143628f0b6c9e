"""The RocketMQ 5 layer's metrics queries (``m.pop_*``, ``m.timer*``) of one run, for
:func:`reports.core.analysis.combine`: the POP section (:class:`reports.core.pop_run.PopRun`) and
the timed messages of the delays section (:mod:`reports.core.timers`). Kept here so the analysis's
table of queries names the layer once."""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Set

import pandas as pd

from rmqemu.reports.core import pop, timers
from rmqemu.reports.core.frame import RunInfo
from rmqemu.reports.core.pop_run import PopRun

#: The queries :func:`rmq5_queries` makes.
POP_QUERIES: tuple[str, ...] = ("m.pop_totals", "m.pop_fifo", "m.pop_faults")
TIMER_QUERIES: tuple[str, ...] = ("m.timers", "m.timer_totals")


def rmq5_lines(ev: pd.DataFrame, kinds: Set[str]) -> dict[str, pd.DataFrame]:
    """Step 2's tables of the layer for a share of nodes (``ev``, the kinds it has): its POP and
    proxy lines (:func:`reports.core.pop.pop_lines`) and its timer lines
    (:func:`reports.core.timers.timer_lines`), each only when a line of it is there."""
    out = {}
    if kinds & {"send", *pop.POP_KINDS}:
        out["pop_lines"] = pop.pop_lines(ev)
    if kinds & {"send", *timers.TIMER_KINDS}:
        out["timer_lines"] = timers.timer_lines(ev)
    return out


def rmq5_queries(t: Mapping[str, pd.DataFrame], info: RunInfo,
                 timed: Callable[[], pd.DataFrame]) -> dict[str, Callable[[], pd.DataFrame]]:
    """Each query's maker, lazily: ``t`` the run's tables (``pop_lines``, ``timer_lines``, and for
    ``m.pop_faults`` ``faults`` and ``convergence``), ``timed`` the wheel entries
    (:func:`reports.core.timers.entries`, shared with the loss metrics' ``delayed``)."""
    pops = functools.cache(lambda: PopRun(t, info))
    per_topic = functools.cache(lambda: timers.by_topic(timed(), t["timer_lines"]))
    return {"m.pop_totals": lambda: pops().totals(), "m.pop_fifo": lambda: pops().fifo_groups(),
            "m.pop_faults": lambda: pops().faults(), "m.timers": per_topic,
            "m.timer_totals": lambda: timers.totals(timed(), per_topic())}
