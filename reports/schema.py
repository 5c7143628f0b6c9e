"""The Spark read schema of a run's events: the core's Arrow schema (:mod:`reports.core.schema`,
built from the event registry) plus the corrupt-record column.

Why explicit: schema inference reads every file twice, picks different types for different
runs (an all-null column becomes a string, ``ts`` an integer when a hand-made log has whole
milliseconds) and cannot tell which lines were broken. With a fixed schema plus a
corrupt-record column, a truncated last line of a killed node becomes a row with only
``_corrupt_record`` set, which the load counts and drops.
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from rmqemu.reports.core.schema import EVENT_FIELDS

CORRUPT_COLUMN = "_corrupt_record"

#: The schema handed to ``spark.read.json``: the event fields plus the corrupt-record column.
EVENT_SCHEMA = T.StructType([*from_arrow_schema(pa.schema(EVENT_FIELDS)).fields,
                             T.StructField(CORRUPT_COLUMN, T.StringType())])
