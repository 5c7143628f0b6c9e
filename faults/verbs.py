"""Pure argument handling for the interactive verbs, so the CLI commands stay thin.

Each ``*_spec`` helper turns a verb's readable arguments into the same :class:`FaultSpec` a
topology would hold (``at: 0``), so a fault started by hand is validated, resolved, recorded and
healed exactly like a scheduled one::

    spec = partition_spec(["namesrv-0"], from_=["broker-a-0"], oneway=True)
    plan = one_fault_plan(spec, injector.new_fault_id(), nodes, rng, scale)

An ``rmqemu up`` supervisor (:mod:`faults.supervisor_verbs`) starts the plan's first step at once
and queues its stop, if it has one, for its loop; a script can run the plan with
``faults.interpreter.run_plan_steps``, which heals only this plan's fault if cut short. ``resume``
/ ``heal`` call ``Injector.stop_on(nodes, "pause")`` / ``Injector.heal_all(restart_killed=True)``.
"""

from __future__ import annotations

import random
import re
from typing import Any, Mapping, Sequence

from pydantic import ValidationError

from rmqemu.emulator.launcher.fault_spec import FaultSpec, parse_duration
from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import SpecError
from rmqemu.faults.clients import ConnectedClients, check_not_clients
from rmqemu.faults.schedule import Plan, check_plan, resolve_spec, sort_steps

_PPM = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*ppm\s*$")


def _validated(entry: dict[str, Any]) -> FaultSpec:
    entry = {k: v for k, v in entry.items() if v is not None and v is not False}
    try:
        return FaultSpec.model_validate({"at": 0, **entry})
    except ValidationError as err:
        lines = []
        for e in err.errors(include_url=False):
            msg = e["msg"].removeprefix("Value error, ")
            where = ".".join(str(p) for p in e["loc"])
            lines.append(f"--{where.replace('_', '-')}: {msg}" if where else msg)
        raise SpecError("\n".join(lines)) from None


def parse_skew(text: str, scale: float = 1.0) -> float:
    """``"+130s"`` -> the clock offset in wall ms (``130 * 1000 * scale``); ``"-2m"``, ``"500ms"``,
    ``"130"`` (seconds) too. Raises :class:`SpecError` saying what was expected."""
    try:
        return parse_duration(text, signed=True) * 1000.0 * scale
    except ValueError as err:
        raise SpecError(f"skew: {err} (e.g. +130s or -500ms)") from None


def skew_spec(targets: Sequence[str], value: str, *, period: str | None = None,
              duration: str | None = None) -> FaultSpec:
    """``rmqemu skew NODE VALUE``: ``+130s`` bumps, ``500ppm`` drifts, ``reset`` (or ``0``) resets;
    with ``--period``, the offset is strobed (the clock flips between 0 and it every period)."""
    text = value.strip()
    if text == "reset" or (not _PPM.match(text) and _is_zero(text)):
        if period is not None:
            raise SpecError("skew: reset takes no --period")
        return _validated({"clock": "reset", "targets": list(targets)})
    if m := _PPM.match(text):
        if period is not None:
            raise SpecError("skew: a drift (ppm) takes no --period")
        return _validated({"clock": "drift", "targets": list(targets), "ppm": float(m.group(1)), "duration": duration})
    parse_skew(text)  # a clear message for a bad value
    mode = "strobe" if period is not None else "bump"
    return _validated({"clock": mode, "targets": list(targets), "offset": text, "period": period, "duration": duration})


def _is_zero(text: str) -> bool:
    try:
        return parse_duration(text, signed=True) == 0
    except ValueError:
        return False


def partition_spec(targets: Sequence[str] = (), *, from_: Sequence[str] | None = None, mode: str | None = None,
                   oneway: bool = False, duration: str | None = None) -> FaultSpec:
    """``rmqemu partition TARGETS [--from OTHERS] [--mode M] [--oneway] [--duration D]``.

    With ``--from``: the two explicit groups ``[TARGETS], [OTHERS]``, and with ``--oneway``
    TARGETS cannot reach OTHERS (docs/design.md §5's rule: the first group cannot reach the second).
    Without: ``--mode`` (default ``isolate``) over TARGETS (``isolate`` cuts TARGETS off from all).
    TARGETS and OTHERS may name real clients (``client@<pid>``, :mod:`faults.clients`).
    """
    if from_:
        if mode not in (None, "groups"):
            raise SpecError(f"partition: --from makes two explicit groups and cannot be combined with --mode {mode}")
        if not targets:
            raise SpecError("partition: --from needs the other side too: rmqemu partition NODE --from OTHER")
        return _validated({"partition": "groups", "groups": [list(targets), list(from_)], "oneway": oneway,
                           "duration": duration})
    chosen = mode or "isolate"
    if chosen == "groups":
        raise SpecError("partition: groups needs --from (rmqemu partition A --from B)")
    if chosen == "isolate" and not targets:
        raise SpecError("partition: name the node(s) to isolate, e.g. rmqemu partition namesrv-0")
    return _validated({"partition": chosen, "targets": list(targets) or None, "oneway": oneway, "duration": duration})


parse_partition_args = partition_spec


def link_spec(sources: Sequence[str], *, to: Sequence[str] | None = None, delay: str | None = None,
              jitter: str | None = None, loss: str | None = None, duplicate: str | None = None,
              oneway: bool = False, duration: str | None = None) -> FaultSpec:
    """``rmqemu link SRC [--to DST] [--delay 200ms] [--jitter 50ms] [--loss 5%] [--duplicate 1%]``."""
    return _validated({"link": list(sources), "to": list(to) if to else None, "delay": delay, "jitter": jitter,
                       "loss": loss, "duplicate": duplicate, "oneway": oneway, "duration": duration})


def process_spec(kind: str, targets: Sequence[str], *, restart_after: str | None = None,
                 duration: str | None = None) -> FaultSpec:
    """``rmqemu kill|stop NODE [--restart-after 20s]`` and ``rmqemu pause NODE [--duration 30s]``."""
    if kind not in ("kill", "stop", "pause"):
        raise SpecError(f"unknown process fault {kind!r}; expected kill, stop or pause")
    return _validated({kind: list(targets), "restart_after": restart_after, "duration": duration})


def one_fault_plan(spec: FaultSpec, fault_id: str, nodes: Mapping[str, NodeInfo], rng: random.Random,
                   scale: float, seed: int = 0, clients: ConnectedClients | None = None) -> Plan:
    """A plan holding just this fault, starting now: its start step and, if timed, its stop.
    ``clients``: the real clients connected now, for a partition or link naming ``client@<pid>``."""
    steps = sort_steps(resolve_spec(spec, fault_id, nodes, rng, scale, source="interactive", clients=clients))
    plan = Plan(seed, scale, steps, None, {"source": "interactive"})
    check_plan(plan, nodes)
    return plan


VERB_KINDS = ("kill", "stop", "pause", "partition", "link", "skew")


def _strs(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def spec_from_args(verb: str, args: Mapping[str, Any]) -> FaultSpec:
    """The :class:`FaultSpec` of one fault-starting verb from its JSON-able arguments, as the CLI
    sends them to the supervisor: the CLI calls it first (a bad duration is a usage error, exit
    2, before any cluster is asked) and the supervisor again (the RPC trusts no caller)."""
    targets = _strs(args.get("targets"))
    check_not_clients(verb, targets)  # a real client takes only partition and link
    if verb in ("kill", "stop", "pause"):
        if not targets:
            raise SpecError(f"{verb}: name the node(s), e.g. rmqemu {verb} broker-a-0")
        return process_spec(verb, targets, restart_after=args.get("restart_after"), duration=args.get("duration"))
    if verb == "partition":
        return partition_spec(targets, from_=_strs(args.get("from")) or None, mode=args.get("mode"),
                              oneway=bool(args.get("oneway")), duration=args.get("duration"))
    if verb == "link":
        if not targets:
            raise SpecError("link: name the source node(s), e.g. rmqemu link pg-1-0 --to broker-a-0 --delay 2s")
        return link_spec(targets, to=_strs(args.get("to")) or None, delay=args.get("delay"),
                         jitter=args.get("jitter"), loss=args.get("loss"), duplicate=args.get("duplicate"),
                         oneway=bool(args.get("oneway")), duration=args.get("duration"))
    if verb == "skew":
        if not targets or args.get("value") in (None, ""):
            raise SpecError("skew: name the node(s) and the offset, e.g. rmqemu skew namesrv-1 +130s")
        return skew_spec(targets, str(args["value"]), period=args.get("period"), duration=args.get("duration"))
    raise SpecError(f"unknown fault verb {verb!r}; expected one of {', '.join(VERB_KINDS)}")
