"""The analysis core: docs/design.md §7 and §9 as plain functions over pandas tables.

Nothing here imports pyspark. :mod:`reports.engine` runs these functions in Spark tasks (one
run's truth per task, one node's heavy work per task); the tests call them on tiny inline
tables, no JVM. Every table of one run: no ``run`` column here, the engine adds it.
"""
