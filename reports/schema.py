"""Explicit Spark schemas for the run's event logs (docs/design.md §6), built from the event
registry (:mod:`rmqemu.events`): one column per field any kind declares, of the declared type.

Why explicit: schema inference reads every file twice, picks different types for
different runs (an all-null column becomes a string, ``ts`` an integer when a hand-made
log has whole milliseconds) and cannot tell us which lines were broken. With a fixed
schema plus a corrupt-record column, a truncated last line of a killed node becomes a
row with only ``_corrupt_record`` set, which we count and drop.

Why from the registry: the writers check their lines against it and ``docs/events.md`` is
rendered from it, so a field that exists is also read (``mode`` and ``subscribe_queues`` were
documented and written, but missing here while this schema was kept by hand).

One union schema serves every event kind: fields a kind does not write are null.
Fields that hold ``[name, number]`` pairs (``publish_queues``, ``allocated``, ``links``)
are read as arrays of strings; Spark renders a JSON number as its text, so the queue id
is cast back to int where it is used.
"""
from __future__ import annotations

from pyspark.sql import types as T

from rmqemu import event_kinds
from rmqemu.event_types import ListOf, MapOf, Pair, Scalar, Type
from rmqemu.events import columns

CORRUPT_COLUMN = "_corrupt_record"

_STR = T.StringType()
_INT = T.IntegerType()
_SCALARS: dict[str, T.DataType] = {
    "str": _STR, "int": _INT, "long": T.LongType(), "float": T.DoubleType(), "bool": T.BooleanType(),
}


def spark_type(t: Type) -> T.DataType:
    """The Spark type a registry type is read as. A pair is an array of strings: its items
    differ in type (``[broker, queue_id]``) and Spark renders a JSON number as its text."""
    if isinstance(t, Scalar):
        return _SCALARS[t.name]
    if isinstance(t, Pair):
        return T.ArrayType(_STR)
    if isinstance(t, ListOf):
        return T.ArrayType(spark_type(t.item))
    if isinstance(t, MapOf):
        return T.MapType(_STR, spark_type(t.value))
    return T.StructType([T.StructField(f.name, spark_type(f.type)) for f in t.fields])


#: The members of ``params`` the report reads: only ``links`` (partitions) is used, ``offset_ms``
#: was read before the schema came from the registry and is kept so the ``faults`` table keeps
#: its shape.
PARAMS_READ = ("links", "offset_ms")

#: Where the Spark type is not the registry's, and why.
OVERRIDES: dict[str, T.DataType] = {
    # Strings on purpose, so that "SIGKILL" or 1 cannot turn a whole line corrupt (a corrupt
    # line is dropped, and a node.exit or client.route line matters to every metric).
    "signal": _STR,
    "changed": _STR,
    # Not every member: the members differ between fault kinds (maps of refused nodes, modes),
    # the report uses only the links, and ``params`` goes as it is into the ``faults`` Parquet
    # table, whose columns should not change with each new fault parameter.
    "params": T.StructType([T.StructField(name, spark_type(event_kinds.FAULT_PARAMS.member(name).type))
                            for name in PARAMS_READ]),
}

#: An item of ``ns.route`` ``queue_datas`` (``reports.staleness`` casts an empty array to it).
QUEUE_DATA = spark_type(event_kinds.QUEUE_DATA)
#: ``fault.start`` / ``fault.end`` ``params`` as read.
FAULT_PARAMS = OVERRIDES["params"]

#: Every field any event kind carries (the common ones first), in registry order.
EVENT_FIELDS: list[T.StructField] = [
    T.StructField(name, OVERRIDES.get(name) or spark_type(f.type)) for name, f in columns().items()
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
