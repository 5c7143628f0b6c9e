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

The classes it hands out keep their static methods the same way: py4j asks the JVM for a
class's member by name on every attribute access (``functions.col`` is a round trip
before the call itself, and the JVM answers it by copying every public method of the
class: about 1,000 for ``functions``). A warm ``metrics()`` of a small run made about
1,750 such requests (bench/README.md).
"""
from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView


class CachingJavaClass(JavaClass):
    """A :class:`py4j.java_gateway.JavaClass` that keeps its static methods and nested
    classes once looked up (a static method's :class:`JavaMember` holds no per-call
    state; fields are values, asked for every time)."""

    def __getattr__(self, name: str) -> Any:
        members = self.__dict__.setdefault("_rmqemu_members", {})
        found = members.get(name)
        if found is None:
            found = super().__getattr__(name)
            if isinstance(found, JavaClass):
                found = _caching_class(found)
            if isinstance(found, (JavaMember, JavaClass)):
                members[name] = found
        return found


def _caching_class(found: JavaClass) -> CachingJavaClass:
    if isinstance(found, CachingJavaClass):
        return found
    cached = CachingJavaClass.__new__(CachingJavaClass)
    cached.__dict__.update(found.__dict__)
    return cached


class CachingJVMView(JVMView):
    """A :class:`py4j.java_gateway.JVMView` that keeps the :class:`JavaClass` each name
    resolved to, as a :class:`CachingJavaClass` (packages, fields and misses are asked for
    every time)."""

    def __getattr__(self, name: str) -> Any:
        classes = self.__dict__.setdefault("_rmqemu_classes", {})
        found = classes.get(name)
        if found is None:
            found = super().__getattr__(name)
            if isinstance(found, JavaClass):
                found = classes[name] = _caching_class(found)
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
