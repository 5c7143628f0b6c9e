"""A JVM view that remembers the Java classes PySpark looks up by their short names.

Why: PySpark reaches most of Spark through unqualified names on the session's JVM view
(every ``F.col``, ``F.lit`` and ``F.when`` asks the view for ``functions``). py4j resolves
such a name in the JVM by first trying it as a class name of its own, then each of the
view's imports in turn, and every miss makes the class loader search all of Spark's
jars (about 280) for a class that does not exist. A report makes thousands of these
calls: in a warm ``metrics()`` of a small run the searches were about 15 % of the
driver JVM's samples, and remembering the classes took the call from 6.0 s to 5.65 s,
alternating in one session (bench/README.md). A class a name resolves to does not
change while the JVM lives (PySpark adds its imports when it starts the gateway), so
the answer is kept for the life of the view.
"""
from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JVMView


class CachingJVMView(JVMView):
    """A :class:`py4j.java_gateway.JVMView` that keeps the :class:`JavaClass` each name
    resolved to (packages, fields and misses are asked for every time)."""

    def __getattr__(self, name: str) -> Any:
        classes = self.__dict__.setdefault("_rmqemu_classes", {})
        found = classes.get(name)
        if found is None:
            found = super().__getattr__(name)
            if isinstance(found, JavaClass):
                classes[name] = found
        return found


def caching(view: JVMView) -> JVMView:
    """A :class:`CachingJVMView` sharing ``view``'s state (same id, imports and gateway)."""
    if isinstance(view, CachingJVMView):
        return view
    cached = CachingJVMView.__new__(CachingJVMView)
    cached.__dict__.update(view.__dict__)
    return cached


def install(spark: Any) -> None:
    """Make ``spark``'s context and session look Java classes up through a
    :class:`CachingJVMView` (PySpark keeps the view on the ``SparkContext`` class)."""
    from pyspark import SparkContext

    if SparkContext._jvm is not None:
        SparkContext._jvm = caching(SparkContext._jvm)
        spark._jvm = SparkContext._jvm
