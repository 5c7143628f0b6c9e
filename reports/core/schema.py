"""The Arrow schema of a run's events, built from the event registry (:mod:`rmqemu.events`).

One column per field any kind declares, of the declared type: the event lines are parsed
straight into it (:mod:`reports.core.lines`), and a value of another type makes a broken line.
"""
from __future__ import annotations

import pyarrow as pa

from rmqemu import event_kinds
from rmqemu.event_types import ListOf, MapOf, Pair, Scalar, Type
from rmqemu.events import columns

_SCALARS: dict[str, pa.DataType] = {
    "str": pa.string(), "int": pa.int32(), "long": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
}


def arrow_type(t: Type) -> pa.DataType:
    """The Arrow type a registry type is read as (a pair: a list of its item type)."""
    if isinstance(t, Scalar):
        return _SCALARS[t.name]
    if isinstance(t, Pair):
        return pa.list_(_SCALARS[t.item.name])
    if isinstance(t, ListOf):
        return pa.list_(arrow_type(t.item))
    if isinstance(t, MapOf):
        return pa.map_(pa.string(), arrow_type(t.value))
    return pa.struct([pa.field(f.name, arrow_type(f.type)) for f in t.fields])


#: The members of ``params`` the report reads: ``links`` (partitions); ``offset_ms`` keeps the
#: ``faults`` table's shape. The others differ between fault kinds and are not read.
PARAMS_READ = ("links", "offset_ms")

#: Where the read type is not the registry's, and why: of ``params``, only what is read.
OVERRIDES: dict[str, pa.DataType] = {
    "params": pa.struct([pa.field(name, arrow_type(event_kinds.FAULT_PARAMS.member(name).type))
                         for name in PARAMS_READ]),
}

#: Every field any event kind carries (the common ones first), in registry order.
EVENT_FIELDS: list[pa.Field] = [pa.field(name, OVERRIDES.get(name) or arrow_type(f.type))
                                for name, f in columns().items()]

#: The columns the reader adds: the file a line came from and its read order in the run.
FILE, SEQ = "file", "seq"

#: One run's events as the core reads them.
EVENTS = pa.schema([*EVENT_FIELDS, pa.field(FILE, pa.string()), pa.field(SEQ, pa.int64())])

#: The node table (from ``manifest.json``, and ``node.start`` for nodes it lacks).
NODES = pa.schema([pa.field("node", pa.string()), pa.field("role", pa.string()), pa.field("broker", pa.string()),
                   pa.field("broker_id", pa.int32()), pa.field("group", pa.string()),
                   pa.field("auto_create", pa.bool_())])

# PermName bits of RocketMQ 4.9.
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

#: The default topic a producer borrows routes from when a topic has none.
AUTO_CREATE_TOPIC = "TBW102"
#: PullStatus code for SUBSCRIPTION_NOT_EXIST (ResponseCode 24).
SUBSCRIPTION_NOT_EXIST = 24
#: Substrings of the client exceptions for a topic the producer has no route of: sendDefaultImpl's
#: and sendSelectImpl's (ordered sends), docs/rocketmq-model.md §3.2, §3.7.
NO_ROUTE_ERRORS: tuple[str, ...] = ("No route info of this topic", "No route info for this topic")
