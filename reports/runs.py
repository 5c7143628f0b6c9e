"""Several loaded runs as ONE input of one analysis (:class:`Runs`, :func:`as_one`).

Why: every transform is keyed by ``run`` (:mod:`reports.intervals`), so one plan analyses
any number of runs, and the events are hash-partitioned by ``run`` (:func:`reports.load.load_runs`),
so that plan needs no shuffle for its windows, group-bys and joins. What differs between runs
(the run's bounds, its ``run.stop``, the plots' bin width) enters as a column looked up by
``run``, never as a literal of one run.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, functions as F

from reports.intervals import RUN
from reports.load import RunData

#: The per-run numbers the analysis reads (:class:`RunData` attributes), as columns of :class:`Runs`.
PER_RUN = ("run_start", "run_end", "measure_end", "stop_ms", "up_ms", "bin_ms")


@dataclass
class Runs:
    """Every loaded run as one input of one analysis: all good events (hash-partitioned by
    ``run``), all node tables, and each per-run number as a Column that looks the row's
    ``run`` up (``run_start`` ... ``bin_ms``, the attributes :class:`RunData` has as floats).

    Why columns and not a joined table of runs: a lookup in a map literal is an expression
    on the row, no join, so no exchange; one plan then serves any number of runs."""

    runs: list[RunData]
    events: DataFrame
    nodes: DataFrame

    def __getattr__(self, name: str) -> Column:
        if name not in PER_RUN:
            raise AttributeError(name)
        pairs = [x for r in self.runs for x in (F.lit(r.id), F.lit(getattr(r, name)).cast("double"))]
        return F.create_map(*pairs)[F.col(RUN)]

    def run(self, run_id: int) -> RunData:
        """The :class:`RunData` of run ``run_id`` (the value of the ``run`` column)."""
        return next(r for r in self.runs if r.id == run_id)


def as_one(runs: list[RunData]) -> Runs:
    """All of ``runs`` (of one :func:`load_runs`) as one analysis input: their events and
    node tables unfiltered (one plan for all), per-run numbers as columns."""
    loaded = runs[0].loaded
    if loaded is None or any(r.loaded is not loaded for r in runs):
        raise ValueError("as_one: the runs must come from one load_runs call")
    if len(runs) == 1:
        return Runs(runs=list(runs), events=runs[0].events, nodes=runs[0].nodes)
    mine = F.col(RUN).isin(*sorted(r.id for r in runs))  # these runs, be they all of the load or not
    events, nodes = loaded[0].filter(mine), loaded[1].filter(mine)
    return Runs(runs=list(runs), events=events, nodes=nodes)
