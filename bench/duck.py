"""The report's core computation in DuckDB SQL, for the benchmark's comparison.

Same definitions as ``reports`` (truth, views, staleness, convergence, misrouted sends,
send outcomes, lost messages), written as one SQL script over the same JSONL files, so
``bench/report_bench.py`` can time both engines on identical input and check that they
agree. Not part of the package: the report itself is Spark (docs/design.md §7).
"""
from __future__ import annotations

from typing import Any

COLUMNS = {
    "ts": "DOUBLE", "node": "VARCHAR", "kind": "VARCHAR", "role": "VARCHAR", "broker": "VARCHAR",
    "broker_id": "INTEGER", "fault_id": "VARCHAR", "fault": "VARCHAR", "targets": "VARCHAR[]",
    "params": "STRUCT(links VARCHAR[][], offset_ms DOUBLE)", "topic": "VARCHAR", "write_queues": "INTEGER",
    "perm": "INTEGER", "queue_datas": "STRUCT(broker VARCHAR, \"read\" INTEGER, \"write\" INTEGER, perm INTEGER)[]",
    "masters": "VARCHAR[]", "publish_queues": "STRUCT(broker VARCHAR, queue_id INTEGER)[]", "msg_id": "VARCHAR",
    "queue_id": "INTEGER", "outcome": "VARCHAR", "latency_ms": "DOUBLE", "msg_ids": "VARCHAR[]",
}

# Interval tables mirror reports/core/truth.py; {run_end} is substituted as a literal.
SQL = """
CREATE TEMP TABLE b AS SELECT min(ts) AS run_start, max(ts) AS run_end FROM ev;
CREATE TEMP TABLE exits AS SELECT node, ts, seq FROM ev WHERE kind = 'node.exit';
CREATE TEMP TABLE lives AS SELECT node, ts AS "start", e AS "end" FROM (
  SELECT node, kind, ts, coalesce(lead(ts) OVER (PARTITION BY node ORDER BY ts, seq), {run_end}) AS e
  FROM ev WHERE kind IN ('node.start', 'node.exit')) WHERE kind = 'node.start' AND e > ts;
CREATE TEMP TABLE bt AS SELECT ev.node, ev.ts, ev.seq, ev.topic, ev.perm, ev.write_queues,
  coalesce(ev.broker, n.broker) AS broker, coalesce(ev.broker_id, n.broker_id, 0) AS broker_id
  FROM ev LEFT JOIN nodes n ON n.node = ev.node AND n.role = 'broker' WHERE ev.kind = 'broker.topic';
CREATE TEMP TABLE hosts AS WITH marks AS (
    SELECT node, topic, ts, seq, broker, broker_id, 0 AS x FROM bt WHERE perm & 2 != 0),
  stops AS (SELECT e.node, k.topic, e.ts, e.seq, NULL AS broker, NULL AS broker_id, 1 AS x
            FROM exits e JOIN (SELECT DISTINCT node, topic FROM marks) k USING (node)),
  u AS (SELECT *, coalesce(sum(x) OVER (PARTITION BY node, topic ORDER BY ts, seq
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS life FROM (FROM marks UNION ALL FROM stops))
  SELECT node, topic, min(ts) FILTER (WHERE x = 0) AS "start",
         coalesce(min(ts) FILTER (WHERE x = 1), {run_end}) AS "end",
         first(broker ORDER BY ts, seq) FILTER (WHERE x = 0) AS broker,
         first(broker_id ORDER BY ts, seq) FILTER (WHERE x = 0) AS broker_id
  FROM u GROUP BY node, topic, life HAVING "start" IS NOT NULL AND "end" > "start";
CREATE TEMP TABLE auto AS WITH marks AS (
    SELECT node, ts, seq, 0 AS x FROM bt WHERE topic = 'TBW102' AND perm & 3 = 3),
  stops AS (SELECT e.node, e.ts, e.seq, 1 AS x FROM exits e WHERE node IN (SELECT node FROM marks)),
  u AS (SELECT *, coalesce(sum(x) OVER (PARTITION BY node ORDER BY ts, seq
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS life FROM (FROM marks UNION ALL FROM stops))
  SELECT node, min(ts) FILTER (WHERE x = 0) AS "start", coalesce(min(ts) FILTER (WHERE x = 1), {run_end}) AS "end"
  FROM u GROUP BY node, life HAVING "start" IS NOT NULL AND "end" > "start";
CREATE TEMP TABLE wq AS WITH u AS (
    SELECT node, topic, ts, seq, write_queues, false AS x FROM bt
    UNION ALL SELECT e.node, k.topic, e.ts, e.seq, NULL, true FROM exits e
      JOIN (SELECT DISTINCT node, topic FROM bt) k USING (node))
  SELECT node, topic, write_queues, "start", "end" FROM (
    SELECT *, ts AS "start", coalesce(lead(ts) OVER (PARTITION BY node, topic ORDER BY ts, seq), {run_end}) AS "end"
    FROM u) WHERE NOT x AND "end" > "start";
CREATE TEMP TABLE fl AS WITH s AS (
    SELECT fault_id, min(ts) AS "start", first(fault ORDER BY ts, seq) AS fault,
           first(targets ORDER BY ts, seq) AS targets, first(params ORDER BY ts, seq) AS params
    FROM ev WHERE kind = 'fault.start' GROUP BY fault_id),
  e AS (SELECT fault_id, min(ts) AS fend FROM ev WHERE kind = 'fault.end' GROUP BY fault_id)
  SELECT s.*, e.fend, coalesce(e.fend, {run_end}) AS "end",
         coalesce((SELECT min(o."start") FROM s o WHERE o."start" > s."start"), {run_end}) AS next_start
  FROM s LEFT JOIN e USING (fault_id);
CREATE TEMP TABLE pauses_raw AS WITH p AS (
    SELECT fault_id, unnest(targets) AS node, "start", fend FROM fl WHERE fault = 'pause'),
  r AS (SELECT unnest(targets) AS node, "start" AS r FROM fl WHERE fault = 'resume')
  SELECT p.node, p."start", coalesce(p.fend, min(r.r), {run_end}) AS "end"
  FROM p LEFT JOIN r ON r.node = p.node AND r.r > p."start" GROUP BY p.fault_id, p.node, p."start", p.fend;
CREATE TEMP TABLE parts_raw AS SELECT least(l[1], l[2]) AS a, greatest(l[1], l[2]) AS b, "start", "end"
  FROM (SELECT unnest(params.links) AS l, "start", "end" FROM fl WHERE fault = 'partition') WHERE len(l) >= 2;
"""

MERGE = """
CREATE TEMP TABLE {out} AS SELECT {keys}, min("start") AS "start", max("end") AS "end" FROM (
  SELECT *, sum(o) OVER (PARTITION BY {keys} ORDER BY "start", "end" ROWS UNBOUNDED PRECEDING) AS g FROM (
    SELECT *, CASE WHEN pe IS NULL OR "start" > pe THEN 1 ELSE 0 END AS o FROM (
      SELECT {keys}, "start", "end", max("end") OVER (PARTITION BY {keys} ORDER BY "start", "end"
             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe FROM {src} WHERE "end" > "start")))
  GROUP BY {keys}, g;
"""

STALE = """
CREATE TEMP TABLE masters AS SELECT h.node, h.topic, h.broker, greatest(h."start", l."start") AS "start",
    least(h."end", l."end") AS "end"
  FROM hosts h JOIN lives l ON l.node = h.node AND h."start" < l."end" AND l."start" < h."end" WHERE h.broker_id = 0;
CREATE TEMP TABLE topics AS SELECT DISTINCT topic FROM (SELECT topic FROM hosts UNION ALL SELECT topic FROM views);
CREATE TEMP TABLE segs AS WITH mp AS (
    SELECT p.*, m.topic FROM pauses p JOIN (SELECT DISTINCT node, topic FROM masters) m USING (node)),
  pts AS (SELECT DISTINCT topic, t FROM (
    SELECT topic, "start" AS t FROM masters UNION ALL SELECT topic, "end" FROM masters
    UNION ALL SELECT topic, "start" FROM mp UNION ALL SELECT topic, "end" FROM mp
    UNION ALL SELECT topic, {run_start} FROM topics UNION ALL SELECT topic, {run_end} FROM topics)
    WHERE t >= {run_start} AND t <= {run_end})
  SELECT topic, t AS "start", lead(t) OVER (PARTITION BY topic ORDER BY t) AS "end" FROM pts QUALIFY "end" IS NOT NULL;
CREATE TEMP TABLE truth AS WITH present AS (
    SELECT s.topic, s."start", s."end", h.broker FROM segs s JOIN masters h
      ON h.topic = s.topic AND h."start" <= s."start" AND h."end" >= s."end"
    WHERE NOT EXISTS (SELECT 1 FROM pauses q WHERE q.node = h.node AND q."start" <= s."start" AND q."end" >= s."end"))
  SELECT s.topic, s."start", s."end",
         coalesce(list_sort(list_distinct(list(p.broker) FILTER (WHERE p.broker IS NOT NULL))), []::VARCHAR[])
           AS brokers
  FROM segs s LEFT JOIN present p USING (topic, "start", "end") GROUP BY ALL;
CREATE TEMP TABLE pieces AS SELECT v.who, v.name, v.topic, greatest(v."start", t."start") AS "start",
    least(v."end", t."end") AS "end",
    len(list_filter(v.view, lambda x: NOT list_contains(t.brokers, x))) > 0 AS over,
    len(list_filter(t.brokers, lambda x: NOT list_contains(v.view, x))) > 0 AS under
  FROM views v JOIN truth t ON t.topic = v.topic AND v."start" < t."end" AND t."start" < v."end";
CREATE TEMP TABLE stale_runs AS SELECT who, name, topic, min("start") AS "start", max("end") AS "end" FROM (
  SELECT *, sum(o) OVER (PARTITION BY who, name, topic ORDER BY "start" ROWS UNBOUNDED PRECEDING) AS g FROM (
    SELECT *, CASE WHEN (over OR under)
                        AND NOT coalesce(lag(over OR under) OVER w AND lag("end") OVER w = "start", false)
                   THEN 1 ELSE 0 END AS o FROM pieces WINDOW w AS (PARTITION BY who, name, topic ORDER BY "start")))
  WHERE over OR under GROUP BY who, name, topic, g;
"""


def views_sql(run_end: float) -> str:
    """Client and namesrv views (``who`` = client / namesrv), cut at the node's exits."""
    return f"""
CREATE TEMP TABLE vlines AS
  SELECT 'client' AS who, node, topic, ts, seq,
         list_sort(list_distinct([q.broker FOR q IN coalesce(publish_queues, [])])) AS view
  FROM ev WHERE kind = 'client.route'
  UNION ALL SELECT 'namesrv', node, topic, ts, seq, list_sort(list_distinct([q.broker FOR q IN coalesce(queue_datas, [])
      IF q.perm & 2 != 0 AND coalesce(q.write, 1) > 0 AND list_contains(coalesce(masters, []), q.broker)]))
  FROM ev WHERE kind = 'ns.route';
CREATE TEMP TABLE views AS WITH u AS (
    SELECT who, node, topic, ts, seq, view, false AS x FROM vlines
    UNION ALL SELECT k.who, e.node, k.topic, e.ts, e.seq, NULL, true FROM exits e
      JOIN (SELECT DISTINCT who, node, topic FROM vlines) k USING (node))
  SELECT who, node AS name, topic, view, "start", "end" FROM (
    SELECT *, ts AS "start",
           coalesce(lead(ts) OVER (PARTITION BY who, node, topic ORDER BY ts, seq), {run_end}) AS "end"
    FROM u) WHERE NOT x AND "end" > "start";
"""


SENDS = """
CREATE TEMP TABLE sends AS SELECT s.* REPLACE (least(s.ts, {run_end} - 0.001) AS ts), s.ts AS ts_logged,
    coalesce(s.broker_id, 0) AS tid,
    CASE WHEN s.broker IS NOT NULL
         THEN coalesce(n.node, s.broker || '-' || coalesce(s.broker_id, 0)::VARCHAR) END AS target
  FROM (SELECT node AS producer, ts, seq, msg_id, topic, broker, broker_id, queue_id, outcome, latency_ms
        FROM ev WHERE kind = 'send') s
  LEFT JOIN nodes n ON n.role = 'broker' AND n.broker = s.broker
    AND coalesce(n.broker_id, 0) = coalesce(s.broker_id, 0);
CREATE TEMP TABLE classified AS SELECT s.*, CASE
    WHEN s.broker IS NULL THEN NULL
    WHEN NOT EXISTS (SELECT 1 FROM lives l WHERE l.node = s.target AND l."start" <= s.ts AND s.ts < l."end") THEN 'dead'
    WHEN EXISTS (SELECT 1 FROM pauses p WHERE p.node = s.target AND p."start" <= s.ts AND s.ts < p."end") THEN 'paused'
    WHEN EXISTS (SELECT 1 FROM parts p WHERE p.a = least(s.producer, s.target) AND p.b = greatest(s.producer, s.target)
                 AND p."start" <= s.ts AND s.ts < p."end") THEN 'partitioned'
    WHEN s.tid != 0 THEN 'not_master'
    WHEN NOT EXISTS (SELECT 1 FROM hosts h WHERE h.node = s.target AND h.topic = s.topic
                     AND h."start" <= s.ts AND s.ts < h."end")
     AND NOT EXISTS (SELECT 1 FROM auto a WHERE a.node = s.target AND a."start" <= s.ts AND s.ts < a."end")
     THEN 'no_topic'
    WHEN s.queue_id >= coalesce(
        (SELECT max(w.write_queues) FROM wq w WHERE w.node = s.target AND w.topic = s.topic
         AND w."start" <= s.ts AND s.ts < w."end"),
        CASE WHEN EXISTS (SELECT 1 FROM auto a WHERE a.node = s.target AND a."start" <= s.ts AND s.ts < a."end")
             THEN (SELECT max(w.write_queues) FROM wq w WHERE w.node = s.target AND w.topic = 'TBW102'
                   AND w."start" <= s.ts AND s.ts < w."end") END) THEN 'bad_queue' END AS reason
  FROM sends s;
"""


def compute(con: Any, paths: list[str], nodes: list[tuple[str, str | None, str | None, int | None]]) -> dict[str, Any]:
    """Run the whole computation on ``paths``; return the headline tables as Python data."""
    cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items()) + "}"
    files = "[" + ", ".join(f"'{p}'" for p in paths) + "]"
    con.execute(f"CREATE OR REPLACE TEMP TABLE ev AS SELECT *, row_number() OVER () AS seq FROM read_json({files}, "
                f"format='newline_delimited', ignore_errors=true, columns={cols}) WHERE ts IS NOT NULL")
    con.execute("CREATE OR REPLACE TEMP TABLE nodes (node VARCHAR, role VARCHAR, broker VARCHAR, broker_id INTEGER)")
    con.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?)", nodes)
    run_start, run_end = con.execute("SELECT min(ts), max(ts) FROM ev").fetchone()
    fmt = {"run_end": repr(float(run_end)), "run_start": repr(float(run_start))}
    for stmt in (SQL.format(**fmt), MERGE.format(out="pauses", keys="node", src="pauses_raw"),
                 MERGE.format(out="parts", keys="a, b", src="parts_raw"), views_sql(run_end),
                 STALE.format(**fmt), SENDS.format(**fmt)):
        con.execute(stmt)
    def q(sql: str) -> Any:
        return con.execute(sql)
    summary = q("""SELECT p.who, p.name, p.topic, sum("end" - "start") FILTER (WHERE over OR under) AS stale_ms,
                     sum("end" - "start") FILTER (WHERE over) AS over_ms,
                     sum("end" - "start") FILTER (WHERE under) AS under_ms,
                     (SELECT count(*) FROM stale_runs r
                      WHERE (r.who, r.name, r.topic) = (p.who, p.name, p.topic)) AS intervals,
                     (SELECT max(r."end" - r."start") FROM stale_runs r
                      WHERE (r.who, r.name, r.topic) = (p.who, p.name, p.topic)) AS max_ms
                   FROM pieces p GROUP BY ALL ORDER BY ALL""").fetchall()
    conv = q("""SELECT f.fault_id, coalesce(max(r."end") - f."start", 0.0) FROM fl f LEFT JOIN stale_runs r
                ON r.who = 'client' AND r."start" < f.next_start AND r."end" > f."start" GROUP BY f.fault_id, f."start"
                ORDER BY 1""").fetchall()
    reasons = dict(q("SELECT reason, count(*) FROM classified WHERE reason IS NOT NULL GROUP BY 1").fetchall())
    sends = q("""SELECT count(*), count(*) FILTER (WHERE outcome = 'ok'),
                 count(*) FILTER (WHERE outcome IN ('timeout', 'error')), count(*) FILTER (WHERE outcome = 'no_route'),
                 quantile_cont(latency_ms, 0.5), quantile_cont(latency_ms, 0.99)
                 FROM sends""").fetchone()
    lost = q("""WITH acked AS (SELECT DISTINCT topic, msg_id FROM sends WHERE outcome = 'ok'),
                consumed AS (SELECT DISTINCT unnest(msg_ids) AS msg_id FROM ev WHERE kind = 'consume'),
                watched AS (SELECT DISTINCT topic FROM ev WHERE kind IN ('consume', 'rebalance'))
                SELECT count(*) FROM acked JOIN watched USING (topic)
                ANTI JOIN consumed USING (msg_id)""").fetchone()[0]
    return {"staleness": summary, "convergence": conv, "misrouted": reasons, "sends": sends, "lost": lost,
            "events": con.execute("SELECT count(*) FROM ev").fetchone()[0]}
