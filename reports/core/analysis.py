"""One run's analysis in three steps, each a plain function the engine runs in a Spark task.

1. :func:`run_truth` (one task per run): the run's small tables, from the few lifecycle,
   fault, topic and route lines (:data:`TRUTH_KINDS`): lives, pauses, partitions, hosting,
   write queues, faults, truth, and the node table.
2. :func:`node_part` (one task per share of a run's nodes: a small run's nodes together, a
   large run's one by one): the heavy, per-client work over those nodes' events with the
   run's truth: their route views against truth (pieces, stale intervals, staleness), their
   sends classified, their unavailability windows, their timer lateness, their route changes
   and queue-lock lines (the order checker's), and the few consumer lines the run-wide metrics
   need. Every function it calls is keyed by node, so a share of whole nodes gives the rows
   those nodes give in the whole run.
3. :func:`combine` (one task per run): the node parts of a run together: what spans nodes
   (fault convergence and impact, send counts and latency percentiles, loss per group, the
   order of ordered messages: :mod:`reports.core.order_run`, transactions:
   :mod:`reports.core.transactions_run`), the metrics queries (``m.*``),
   the plot tables (``p.*``) and the derived tables.

:func:`analyse` runs the three in one process, all nodes in one share: the tests' engine,
and the definition of what the Spark engine computes.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqemu.reports.core import (
    availability,
    consumers,
    delays,
    failover,
    failover_plot,
    failover_routes,
    health,
    order_routes,
    plots,
    pop,
    retries,
    settle,
    staleness,
    timers,
    transactions,
)
from rmqemu.reports.core import sends as sends_mod
from rmqemu.reports.core import truth as truth_mod
from rmqemu.reports.core.failover_run import FailoverRun
from rmqemu.reports.core.frame import RunInfo, events, node_table
from rmqemu.reports.core.order_locks import LOCK_KINDS, lock_lines
from rmqemu.reports.core.order_run import OrderRun
from rmqemu.reports.core.rmq5_run import rmq5_lines, rmq5_queries
from rmqemu.reports.core.transactions_run import TransactionRun

Tables = dict[str, pd.DataFrame]

#: The kinds step 1 reads (a run's few lines; the route kinds only name the topics truth is drawn for).
TRUTH_KINDS: tuple[str, ...] = ("node.start", "node.exit", "fault.start", "fault.end", "broker.topic",
                                "client.route", "ns.route", "run.drain", *failover.DLEDGER_KINDS)
#: The kinds step 2 reads (with ``node.exit``, which ends a view).
NODE_KINDS: tuple[str, ...] = ("node.exit", "client.route", "ns.route", "send", "node.lag",
                               "pull", "consume", "rebalance", *LOCK_KINDS, *delays.DELAY_KINDS,
                               *retries.RETRY_KINDS, *transactions.TX_KINDS, *pop.POP_KINDS, *timers.TIMER_KINDS)
#: The columns step 1 reads: the engine hands it no other (a narrow shuffle of a large run).
TRUTH_COLUMNS: tuple[str, ...] = (
    "ts", "node", "kind", "seq", "role", "broker", "broker_id", "group", "topic", "perm", "write_queues", "how",
    "fault_id", "fault", "targets", "params", "completed", "waited_ms", "timeout_ms", "lag_total", "lag_left",
    "unreadable", "interrupted", *failover.DLEDGER_COLUMNS)
#: The columns step 2 reads.
NODE_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys((
    "ts", "node", "kind", "seq", "topic", "publish_queues", "queue_datas", "masters", "msg_id", "broker",
    "broker_id", "queue_id", "attempt", "outcome", "code", "latency_ms", "error", "group", "window_ms", "p50_ms",
    "p99_ms", "max_ms", "msg_ids", "cid", "cids", "allocated", "sharding_key", "route_queues", "offsets", "orderly",
    "peer", "change", "late_ms", "source", "broker_addr", "proxy", "view", *delays.DELAY_COLUMNS,
    *retries.RETRY_COLUMNS, *transactions.TX_COLUMNS, *pop.POP_COLUMNS, *timers.TIMER_COLUMNS)))
#: The consumer lines step 3 reads, as step 2 passes them on (pulls: one per node, group and topic).
CONSUMER_KINDS: tuple[str, ...] = ("consume", "rebalance", "pull", "client.route")
#: The kinds of :data:`TRUTH_KINDS` step 1 reads only the topic of (truth is drawn for every topic
#: a route names): one line per kind and topic will do (:func:`truth_lines`).
TOPIC_KINDS: tuple[str, ...] = ("client.route", "ns.route")
#: What a reader parses (:mod:`reports.core.lines`): the kinds and columns some step reads. Adding
#: a kind or a column to the declarations above is all it takes for the engines to read it.
READ_KINDS: tuple[str, ...] = tuple(dict.fromkeys(TRUTH_KINDS + NODE_KINDS))
READ_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(TRUTH_COLUMNS + NODE_COLUMNS))

#: Derived table (Parquet name) -> the analysis table it is written from.
TABLES: dict[str, str] = {
    "lives": "lives", "pauses": "pauses", "partitions": "partitions", "hosts": "hosts", "faults": "faults",
    "truth": "truth", "client_views": "client_views", "namesrv_views": "namesrv_views",
    "client_stale_pieces": "client_pieces", "namesrv_stale_pieces": "namesrv_pieces",
    "client_stale_intervals": "client_intervals", "namesrv_stale_intervals": "namesrv_intervals",
    "client_staleness": "client_staleness", "namesrv_staleness": "namesrv_staleness",
    "fault_convergence": "convergence", "sends": "classified", "order_violations": "order_violations",
    "transactions": "tx_messages",
}


def truth_lines(lines: pa.Table) -> pa.Table:
    """Of some of a run's lines (:data:`READ_COLUMNS`), what step 1 needs of them: the lines of
    :data:`TRUTH_KINDS` with their columns, and of :data:`TOPIC_KINDS` only the first line of
    each kind and topic. Step 1 gives the same tables for these as for all the lines."""
    lines = lines.filter(pc.is_in(lines.column("kind"), pa.array(TRUTH_KINDS))).select(list(TRUTH_COLUMNS))
    topical = pc.fill_null(pc.is_in(lines.column("kind"), pa.array(TOPIC_KINDS)), False)
    if not pc.any(topical).as_py():
        return lines
    routes = lines.filter(topical)
    first = routes.group_by(["kind", "topic"], use_threads=False).aggregate([("seq", "min")])
    return pa.concat_tables([lines.filter(pc.invert(topical)),
                             routes.filter(pc.is_in(routes.column("seq"), first.column("seq_min")))])


def run_truth(ev: pd.DataFrame, info: RunInfo, manifest_nodes: Mapping[str, Mapping[str, Any]]) -> Tables:
    """Step 1: the run's small tables from its :data:`TRUTH_KINDS` lines (more lines may be
    given: they are ignored)."""
    ev = ev[ev["kind"].isin(TRUTH_KINDS)]
    end = info.run_end
    nodes = node_table(manifest_nodes, ev)
    fl = truth_mod.faults(ev, end)
    out: Tables = {"nodes": nodes, "lives": truth_mod.lives(ev, end), "faults": fl,
                   "pauses": truth_mod.pauses(fl, end), "partitions": truth_mod.partitions(fl),
                   "hosts": truth_mod.hosts(ev, nodes, end), "autocreate": truth_mod.autocreate(ev, nodes, end),
                   "write_queues": truth_mod.write_queues(ev, end)}
    routes = ev.loc[ev["kind"].isin(("client.route", "ns.route")), "topic"]
    topics = pd.concat([out["hosts"]["topic"], routes]).dropna().unique()
    out["truth"] = truth_mod.truth(out["hosts"], out["pauses"], topics, info.run_start, end, out["lives"])
    out["m.autocreate"] = consumers.autocreate_coverage(ev, nodes, out["hosts"], out["autocreate"])
    out["m.drain"] = pd.DataFrame(health.drain_rows(ev))
    out["exits"] = truth_mod.exits(ev)
    out.update(failover.truth_tables(ev, manifest_nodes, out["exits"], fl, end, info.measure_end))
    return out


#: The metrics queries that read route views, and those that read the classified sends.
VIEW_QUERIES = frozenset({"m.clients", "m.namesrvs", "m.faults", "m.order_remaps", "m.order_failed",
                          "m.tx_faults", "m.pop_faults"})
CLASSIFY_QUERIES = frozenset({"m.misrouted", "m.faults", "m.order_failed"})


def node_part(ev: pd.DataFrame, truth: Mapping[str, pd.DataFrame], info: RunInfo,
              queries: Collection[str] | None = None) -> Tables:
    """Step 2: the analysis of a share of a run's nodes (``ev``: all the events of each of
    them; one node, or all). Only the tables their kinds of line make (a broker logs no
    route, a namesrv no send); :func:`concat` gives the run every table. ``queries``: only what
    these metrics queries need (None: all, the derived tables and plots included): route views
    for :data:`VIEW_QUERIES`, the sends classified for :data:`CLASSIFY_QUERIES` (else plain send
    attempts)."""
    end, until = info.run_end, info.measure_end
    kinds = set(ev["kind"].unique())
    want_views = queries is None or bool(VIEW_QUERIES & set(queries))
    classify = queries is None or bool(CLASSIFY_QUERIES & set(queries))
    out: Tables = {}
    for who, kind, views_of in (("client", "client.route", staleness.client_views),
                                ("namesrv", "ns.route", staleness.namesrv_views)):
        if kind in kinds and want_views:
            views = views_of(ev, end, until)
            pieces = staleness.stale_pieces(views, truth["truth"], who)
            intervals = staleness.stale_intervals(pieces, who)
            labels = staleness.holders(ev, truth["nodes"]) if who == "client" else None
            out.update({f"{who}_views": views, f"{who}_pieces": pieces, f"{who}_intervals": intervals,
                        f"{who}_staleness": staleness.staleness_summary(pieces, intervals, who, labels)})
    if "send" in kinds:
        sent = sends_mod.sends(ev)
        out["classified"] = sends_mod.classify_sends(
            sent, truth["nodes"], truth["lives"], truth["pauses"], truth["partitions"], truth["hosts"],
            truth["autocreate"], truth["write_queues"], end, truth["addresses"],
            truth["dledger_masters"], truth["dledger_members"]) if classify else sent
        out["windows"] = availability.unavailable_windows(sent, until)
    if "client.route" in kinds:
        out["route_changes"] = order_routes.route_changes(ev)
    if kinds & {"client.route", "ns.route"}:
        out["failover_routes"] = failover_routes.route_lines(ev)
    if kinds & set(LOCK_KINDS):
        out["lock_lines"] = lock_lines(ev)
    if "node.lag" in kinds:
        out["lag"] = health.node_lag(ev, truth["pauses"], since=info.up_ms)
    if "pull" in kinds:
        out["sne"] = consumers.subscription_not_exist(ev)
    if kinds & {"send", *delays.DELAY_KINDS}:
        out["delay_lines"] = delays.delay_lines(ev)
    if kinds & set(retries.RETRY_KINDS):
        out["retry_lines"] = retries.retry_lines(ev)
    if kinds & {"send", *transactions.TX_KINDS}:
        out["tx_lines"] = transactions.tx_lines(ev)
    out.update(rmq5_lines(ev, kinds))
    if kinds & set(CONSUMER_KINDS):
        mine = ev[ev["kind"].isin(CONSUMER_KINDS)]
        pulls = mine[mine["kind"] == "pull"].drop_duplicates(["node", "group", "topic"])
        last_routes = consumers.latest(mine[mine["kind"] == "client.route"], ["node", "topic"])
        out["consumer_lines"] = pd.concat([mine[mine["kind"].isin(("consume", "rebalance"))], pulls, last_routes],
                                          ignore_index=True)
    return out


@functools.cache
def blank_part() -> Tables:
    """Every table a node part can have, empty (the part of a node with one line of each of
    :data:`NODE_KINDS`, cut to no row): what :func:`concat` fills a missing one with. Computed
    once per process: the columns do not depend on the run."""
    info = RunInfo(0.0, 1.0)
    ev = events([{"ts": 0.0, "node": "n", "kind": kind} for kind in NODE_KINDS])
    part = node_part(ev, run_truth(ev.iloc[0:0], info, {}), info)
    return {name: df.iloc[0:0] for name, df in part.items()}


def concat(parts: Iterable[Tables]) -> Tables:
    """The node parts of a run as one set of tables, every table of :func:`blank_part` present."""
    by_name: dict[str, list[pd.DataFrame]] = {}
    for part in [{name: df.copy() for name, df in blank_part().items()}, *parts]:
        for name, df in part.items():
            by_name.setdefault(name, []).append(df)
    return {name: pd.concat(dfs[1:], ignore_index=True) if len(dfs) > 2 else dfs[-1] for name, dfs in by_name.items()}


def combine(parts: Tables, truth: Mapping[str, pd.DataFrame], info: RunInfo, plots_too: bool = True,
            queries: Collection[str] | None = None) -> Tables:
    """Step 3: the run's metrics queries (``m.*``: all, or ``queries``), plot tables (``p.*``,
    when ``plots_too``) and analysis tables (by :data:`TABLES` field), from its node parts
    (:func:`concat`)."""
    t: Tables = {**{k: v for k, v in truth.items() if not k.startswith("m.")}, **parts}
    end, stop, t0 = info.measure_end, info.stop_ms, info.run_start
    classified, windows, lines = t["classified"], t["windows"], t["consumer_lines"]
    orders = functools.cache(lambda: OrderRun(t, info))
    # a half is a message once committed: the loss metrics read its ok attempts as acks only then
    acks = functools.cache(lambda: transactions.acks(classified, t["tx_lines"]))
    # the consumption duplicates leave out the deliveries the order checker counts unheld
    messages = functools.cache(lambda: consumers.Messages(lines, acks(), stop, orders().unheld_lines))
    entries = functools.cache(lambda: delays.entries(t["delay_lines"], info.scale))
    timed = functools.cache(lambda: timers.entries(t["timer_lines"], info.scale))

    def fates_of(sends: pd.DataFrame) -> settle.Fates:  # still parked at run.stop: delayed
        parked = pd.concat([delays.undelivered(entries(), stop), timers.undelivered(timed(), stop)], ignore_index=True)
        return settle.Fates(lines, sends, t["retry_lines"], t["lives"], stop, parked)
    fates = functools.cache(lambda: fates_of(acks()))
    delayed = functools.cache(lambda: delays.by_topic(entries(), t["delay_lines"], info.scale, end))
    back = functools.cache(lambda: retries.backs(t["retry_lines"]))
    failovers = functools.cache(lambda: FailoverRun(t, info, fates, lambda: orders().unheld_lines))
    txs = functools.cache(lambda: TransactionRun(t, info, fates_of, lambda: orders().unheld_lines))

    def faults() -> pd.DataFrame:
        rows = t["convergence"].merge(t["faults"][["fault_id", "targets", "end", "has_end"]], on="fault_id")
        impact = availability.with_impact(rows, t["faults"], windows, classified, end)
        due = ["due", "status", "lateness_ms"]  # delayed and timed messages alike
        impact = delays.fault_lateness(impact, pd.concat([entries()[due], timed()[due]], ignore_index=True),
                                       info.scale, end)
        return pd.DataFrame({
            "fault_id": impact["fault_id"], "fault": impact["fault"], "targets": impact["targets"],
            "start_offset_ms": impact["start"] - t0, "end_offset_ms": impact["end"] - t0,
            "has_end": impact["has_end"], "converged_ms": impact["converged_ms"],
            "stale_views": impact["stale_views"], "impact_end_offset_ms": impact["impact_end"] - t0,
            "rto_ms": impact["rto_ms"], "failed_sends": impact["failed_sends"],
            "misrouted_sends": impact["misrouted_sends"], "late_deliveries": impact["late_deliveries"],
            "late_max_ms": impact["late_max_ms"]})

    made: dict[str, Callable[[], pd.DataFrame]] = {
        "m.faults": faults,
        "m.clients": lambda: t["client_staleness"], "m.namesrvs": lambda: t["namesrv_staleness"],
        "m.misrouted": lambda: sends_mod.misrouted_by_reason(classified),
        "m.availability": lambda: availability.availability_by_pair(classified, windows),
        "m.outcomes": lambda: sends_mod.send_outcomes(classified),
        "m.latency": lambda: sends_mod.latency_percentiles(classified),
        "m.no_route": lambda: sends_mod.no_route_errors(classified),
        "m.autocreate": lambda: truth["m.autocreate"], "m.drain": lambda: truth["m.drain"],
        "m.timing": lambda: t["lag"], "m.sne": lambda: t["sne"],
        "m.consumption": lambda: settle.consumption(consumers.consumption(messages()), fates()),
        "m.group_loss": lambda: settle.group_loss(consumers.group_loss(messages()), fates()),
        "m.delays": delayed, "m.delay_totals": lambda: delays.totals(entries(), delayed()),
        "m.retries": lambda: retries.by_reconsume_times(back()), "m.dlq": lambda: retries.dead_letters(back()),
        "m.retry_totals": lambda: retries.totals(back(), lines),
        "m.nsq": lambda: consumers.non_subscriber_queues(lines),
        "m.order_groups": lambda: orders().summary(), "m.order_remaps": lambda: orders().remaps(),
        "m.order_failed": lambda: orders().failed(), "m.order_availability": lambda: orders().availability(),
        "m.order_moved": lambda: orders().moved(),
        "m.failover_groups": lambda: failovers().groups(), "m.failover_faults": lambda: failovers().faults(),
        "m.failover_failovers": lambda: failovers().rows(), "m.failover_views": lambda: failovers().view_rows(),
        "m.failover_rto": lambda: failovers().rto_rows(),
        "m.failover_stale_sends": lambda: failovers().stale_master_sends(),
        "m.failover_lost": lambda: failovers().lost,
        "m.tx_totals": lambda: txs().totals(), "m.tx_checks": lambda: txs().by_checks(),
        "m.tx_groups": lambda: txs().groups(), "m.tx_faults": lambda: txs().faults(),
        **rmq5_queries(t, info, timed),
    }
    wanted = set(made) if queries is None else set(queries)
    if queries is None or VIEW_QUERIES & wanted:
        t["convergence"] = staleness.fault_convergence(t["faults"], t["client_intervals"])
    m = {name: make() for name, make in made.items() if name in wanted}
    if queries is None:
        t["order_violations"] = orders().violations
        t["tx_messages"] = txs().msgs
    if plots_too:
        m.update(plots.plot_tables(t, info))
        m.update(orders().plot_tables())
        m.update(failover_plot.plot_tables(failovers()))
    return {**t, **m}


def analyse(ev: pd.DataFrame, info: RunInfo, manifest_nodes: Mapping[str, Mapping[str, Any]],
            plots_too: bool = True, queries: Collection[str] | None = None) -> Tables:
    """The whole analysis of one run in this process: step 1, step 2 for all its nodes at
    once, step 3 (``queries``: only what these metrics queries need, see :func:`node_part`)."""
    truth = run_truth(ev[list(TRUTH_COLUMNS)], info, manifest_nodes)
    mine = ev.loc[ev["kind"].isin(NODE_KINDS) & ev["node"].notna(), list(NODE_COLUMNS)]
    return combine(concat([node_part(mine, truth, info, queries)]), truth, info, plots_too, queries)
