"""Driver work a report saves: the session's JVM view remembers Java classes by name
(reports.jvm_view), and a report names its call sites instead of walking stacks (reports.session)."""
from __future__ import annotations

from py4j.java_gateway import JavaClass, JavaPackage
from pyspark import SparkContext
from pyspark.sql import functions as F

from reports.jvm_view import CachingJavaClass, CachingJVMView, _caching_class, caching


def test_the_session_looks_classes_up_through_the_caching_view(spark):
    view = SparkContext._jvm
    assert isinstance(view, CachingJVMView) and spark._jvm is view
    first = view.functions
    assert isinstance(first, JavaClass) and view.functions is first
    assert isinstance(view.org, JavaPackage)  # a package is not kept: it is asked for again
    assert "org" not in view.__dict__["_rmqemu_classes"]


def test_its_classes_keep_static_methods_and_nested_classes_but_not_fields(spark):
    functions = SparkContext._jvm.functions
    assert isinstance(functions, CachingJavaClass)
    assert functions.col is functions.col  # one member lookup, not one per F.col
    integer = _caching_class(SparkContext._jvm.java.lang.Integer)
    assert integer.MAX_VALUE == 2**31 - 1 and "MAX_VALUE" not in integer.__dict__["_rmqemu_members"]
    assert integer.valueOf("7") == 7 and "valueOf" in integer.__dict__["_rmqemu_members"]
    entry = _caching_class(SparkContext._jvm.java.util.Map).Entry  # a nested class
    assert isinstance(entry, CachingJavaClass) and entry._fqn == "java.util.Map$Entry"


def test_dataframes_built_through_it_compute(spark):
    df = spark.range(5).select((F.col("id") * F.lit(2)).alias("x")).filter(F.col("x") > 4)
    assert sorted(r["x"] for r in df.collect()) == [6, 8]


def test_caching_twice_is_the_same_view(spark):
    view = SparkContext._jvm
    assert caching(view) is view


def test_call_sites_are_named_in_the_block_and_restored_after(spark):
    from reports.session import CALL_SITE, call_sites_named

    sc = spark.sparkContext
    sc.setLocalProperty("callSite.short", "mine")
    try:
        with call_sites_named(spark):
            assert sc.getLocalProperty("callSite.short") == sc.getLocalProperty("callSite.long") == CALL_SITE
        assert sc.getLocalProperty("callSite.short") == "mine"
        assert sc.getLocalProperty("callSite.long") is None
    finally:
        sc.setLocalProperty("callSite.short", None)
