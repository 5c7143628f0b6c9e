"""Explicit Spark schemas for the run's event logs (DESIGN section 6).

Why explicit: schema inference reads every file twice, picks different types for
different runs (an all-null column becomes a string, ``ts`` an integer when a hand-made
log has whole milliseconds) and cannot tell us which lines were broken. With a fixed
schema plus a corrupt-record column, a truncated last line of a killed node becomes a
row with only ``_corrupt_record`` set, which we count and drop.

One union schema serves every event kind: fields a kind does not write are null.
Fields that hold ``[name, number]`` pairs (``publish_queues``, ``allocated``, ``links``)
are read as arrays of strings; Spark renders a JSON number as its text, so the queue id
is cast back to int where it is used.
"""
from __future__ import annotations

from pyspark.sql import types as T

CORRUPT_COLUMN = "_corrupt_record"

_STR = T.StringType()
_INT = T.IntegerType()
_DBL = T.DoubleType()
_PAIRS = T.ArrayType(T.ArrayType(_STR))

QUEUE_DATA = T.StructType([
    T.StructField("broker", _STR),
    T.StructField("read", _INT),
    T.StructField("write", _INT),
    T.StructField("perm", _INT),
])

FAULT_PARAMS = T.StructType([
    T.StructField("links", _PAIRS),
    T.StructField("offset_ms", _DBL),
])

#: Every field any event kind of DESIGN section 6 carries (plus the extra facts the
#: launcher/clients write: ``error``, ``group``, ``code``, ``signal``). ``signal`` and
#: ``changed`` are strings so that ``"SIGKILL"`` or ``1`` cannot turn a whole line corrupt.
EVENT_FIELDS: list[T.StructField] = [
    T.StructField("ts", _DBL),
    T.StructField("local_ms", _DBL),
    T.StructField("node", _STR),
    T.StructField("kind", _STR),
    # node.start / node.exit
    T.StructField("role", _STR),
    T.StructField("pid", T.LongType()),
    T.StructField("broker", _STR),
    T.StructField("broker_id", _INT),
    T.StructField("code", _INT),
    T.StructField("signal", _STR),
    # fault.start / fault.end
    T.StructField("fault_id", _STR),
    T.StructField("fault", _STR),
    T.StructField("targets", T.ArrayType(_STR)),
    T.StructField("params", FAULT_PARAMS),
    # broker.topic
    T.StructField("topic", _STR),
    T.StructField("read_queues", _INT),
    T.StructField("write_queues", _INT),
    T.StructField("perm", _INT),
    T.StructField("how", _STR),
    # ns.broker / ns.route
    T.StructField("broker_addr", _STR),
    T.StructField("change", _STR),
    T.StructField("queue_datas", T.ArrayType(QUEUE_DATA)),
    T.StructField("masters", T.ArrayType(_STR)),
    # client.route
    T.StructField("source", _STR),
    T.StructField("publish_queues", _PAIRS),
    T.StructField("changed", _STR),
    # send
    T.StructField("msg_id", _STR),
    T.StructField("queue_id", _INT),
    T.StructField("attempt", _INT),
    T.StructField("outcome", _STR),
    T.StructField("latency_ms", _DBL),
    T.StructField("error", _STR),
    T.StructField("group", _STR),
    # pull / consume / rebalance
    T.StructField("msg_ids", T.ArrayType(_STR)),
    T.StructField("cid", _STR),
    T.StructField("cids", T.ArrayType(_STR)),
    T.StructField("strategy", _STR),
    T.StructField("allocated", _PAIRS),
]

#: The schema handed to ``spark.read.json``: the event fields plus the corrupt-record column.
EVENT_SCHEMA = T.StructType(EVENT_FIELDS + [T.StructField(CORRUPT_COLUMN, _STR)])

#: Node table built from ``manifest.json`` (and ``node.start`` events for nodes it lacks).
NODE_SCHEMA = T.StructType([
    T.StructField("node", _STR),
    T.StructField("role", _STR),
    T.StructField("broker", _STR),
    T.StructField("broker_id", _INT),
    T.StructField("group", _STR),
    T.StructField("auto_create", T.BooleanType()),
])

# PermName bits of RocketMQ 4.9.
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

#: The default topic a producer borrows routes from when a topic has none.
AUTO_CREATE_TOPIC = "TBW102"
#: PullStatus code for SUBSCRIPTION_NOT_EXIST (ResponseCode 24).
SUBSCRIPTION_NOT_EXIST = 24
#: Substring of the client exception for a topic the namesrvs do not know.
NO_ROUTE_ERROR = "No route info of this topic"
