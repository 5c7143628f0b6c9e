"""Verdicts: a run's metrics judged against ``expect:`` (docs/design.md §9).

An ``expect:`` mapping goes from a dotted path into metrics.json to a rule: a number or
``true``/``false`` (the value must equal it), or ``{max: x}`` / ``{min: x}`` (both may be
given)::

    expect:
      consumption.lost: 0
      misrouted.total: {max: 50}
      timing.healthy: true

Pure functions over plain data, shared by everything that judges a run (``rmqemu report
--expect``, ``launch --report``, sweeps, the pytest helper), so they all say the same thing
about the same metrics. A malformed rule, or a path the metrics do not have, is bad input
(:class:`~rmqemu.errors.ExpectationError`, exit 2); a rule the value breaks is a failed
:class:`Verdict`, not an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rmqemu import metric_paths
from rmqemu.errors import ExpectationError

Number = int | float


@dataclass(frozen=True)
class Expectation:
    """One rule: ``equals`` (a number or a bool), or bounds ``max`` / ``min`` (numbers)."""

    path: str
    equals: Number | bool | None = None
    max: Number | None = None
    min: Number | None = None

    def describe(self) -> str:
        if self.equals is not None:
            return f"= {_show(self.equals)}"
        parts = ([f">= {_show(self.min)}"] if self.min is not None else []) + \
                ([f"<= {_show(self.max)}"] if self.max is not None else [])
        return " and ".join(parts)


@dataclass(frozen=True)
class Verdict:
    """What one expectation found: the value, whether it held, and by how much it missed."""

    expectation: Expectation
    value: Any
    passed: bool
    miss: str = ""  # e.g. "3 over the max of 50"; empty when it held

    @property
    def path(self) -> str:
        return self.expectation.path

    @property
    def shown_value(self) -> str:
        """The value as a person reads it (``true``, ``53``, ``12.5``)."""
        return _show(self.value)

    def line(self) -> str:
        """One line for a person: ``PASS consumption.lost = 0`` / ``FAIL misrouted.total = 53 (...)``."""
        state = "PASS" if self.passed else "FAIL"
        tail = f" ({self.miss})" if self.miss else ""
        return f"{state} {self.path} = {_show(self.value)}, expected {self.expectation.describe()}{tail}"


@dataclass(frozen=True)
class Expectations:
    """The rules a run is judged by and where they came from (a file, a run's topology), so a
    verdict can say which file to edit."""

    rules: list[Expectation]
    source: str


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: What an editor is told an ``expect:`` rule looks like (the topology's JSON schema); the
#: functions below check it for real.
EXPECT_RULE_SCHEMA: dict[str, Any] = {"anyOf": [
    {"type": "number"}, {"type": "boolean"},
    {"type": "object", "properties": {"max": {"type": "number"}, "min": {"type": "number"}},
     "additionalProperties": False, "minProperties": 1}]}


def parse_expect(raw: Any, source: str = "expect") -> list[Expectation]:
    """The rules of an ``expect:`` mapping; every malformed one is named in one error."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        raise ExpectationError(f"{source}: expected a mapping from metric paths to rules, got {type(raw).__name__}")
    rules: list[Expectation] = []
    problems: list[str] = []
    for path, rule in raw.items():
        where = f"{source}.{path}"
        if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
            problems.append(f"{where}: a metric path is dotted names, e.g. consumption.lost")
        elif isinstance(rule, bool) or _is_number(rule):
            rules.append(Expectation(path, equals=rule))
        elif isinstance(rule, Mapping) and rule and set(rule) <= {"max", "min"} \
                and all(_is_number(v) for v in rule.values()):
            if "max" in rule and "min" in rule and rule["min"] > rule["max"]:
                problems.append(f"{where}: min {rule['min']} is above max {rule['max']}")
            else:
                rules.append(Expectation(path, max=rule.get("max"), min=rule.get("min")))
        else:
            problems.append(f"{where}: expected a number, true/false, or {{max: x}} / {{min: x}} with numbers, "
                            f"got {rule!r}")
    if problems:
        raise ExpectationError("\n".join(problems))
    return rules


def expect_problems(raw: Any, source: str = "expect") -> list[str]:
    """Every problem of an ``expect:`` mapping, one line each: malformed rules (:func:`parse_expect`)
    and paths metrics.json has no single value at (the metric registry), so ``validate`` catches
    a typo before the run rather than after it. Topology and sweep files both check with this."""
    if raw is not None and not isinstance(raw, Mapping):
        return [f"{source}: expected a mapping from metric paths to rules, got {type(raw).__name__}"]
    problems: list[str] = []
    for path, rule in (raw or {}).items():  # one at a time: every bad rule and every bad path
        try:
            parse_expect({path: rule}, source)
        except ExpectationError as exc:
            problems += str(exc).splitlines()
        if isinstance(path, str) and path and (why := metric_paths.problem(path)):
            problems.append(f"{source}.{path}: {why}")
    return problems


_MISSING = object()


def lookup(metrics: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a metrics document (``_MISSING`` when there is none)."""
    node: Any = metrics
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def value_at(metrics: Mapping[str, Any], path: str) -> Any:
    """:func:`lookup`, except that a count under keys the run names (``misrouted.by_reason_outcome.
    dead.timeout``, ``bad_lines.by_file.<path>``) is 0 when the run has no such key: those maps
    list only what occurred, so a rule on a timeout that never happened holds, not breaks."""
    value = lookup(metrics, path)
    if value is _MISSING:
        metric = metric_paths.find(path)
        if metric is not None and metric.unit == metric_paths.COUNT and "*" in metric.path:
            return 0
    return value


def check_paths(rules: list[Expectation], metrics: Mapping[str, Any], source: str = "expect") -> None:
    """Refuse rules whose path the metrics do not have, or that hold a table rather than a value."""
    problems = []
    for rule in rules:
        value = value_at(metrics, rule.path)
        if value is _MISSING:
            problems.append(f"{source}.{rule.path}: metrics.json has no such path "
                            "(a run's report/metrics.json shows them)")
        elif isinstance(value, (Mapping, list)):
            problems.append(f"{source}.{rule.path}: is a {'table' if isinstance(value, list) else 'group'}, "
                            "not a value; name one of its fields")
    if problems:
        raise ExpectationError("\n".join(problems))


def judge(rules: list[Expectation], metrics: Mapping[str, Any], source: str = "expect") -> list[Verdict]:
    """Every rule against the metrics, in order (paths checked first: see :func:`check_paths`)."""
    check_paths(rules, metrics, source)
    return [_judge_one(rule, value_at(metrics, rule.path)) for rule in rules]


def _judge_one(rule: Expectation, value: Any) -> Verdict:
    if rule.equals is not None:
        if isinstance(rule.equals, bool) or isinstance(value, bool):
            held = isinstance(value, bool) and value is rule.equals
        else:
            held = _is_number(value) and math.isclose(value, rule.equals, rel_tol=0, abs_tol=1e-9)
        miss = "" if held else (f"off by {_show(value - rule.equals)}" if _is_number(value) and
                                not isinstance(rule.equals, bool) else "")
        return Verdict(rule, value, held, miss)
    if not _is_number(value):
        return Verdict(rule, value, False, "not a number")
    if rule.max is not None and value > rule.max:
        return Verdict(rule, value, False, f"{_show(value - rule.max)} over the max of {_show(rule.max)}")
    if rule.min is not None and value < rule.min:
        return Verdict(rule, value, False, f"{_show(rule.min - value)} under the min of {_show(rule.min)}")
    return Verdict(rule, value, True)


def passed(verdicts: list[Verdict]) -> bool:
    return all(v.passed for v in verdicts)
