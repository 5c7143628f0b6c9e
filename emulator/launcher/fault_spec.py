"""One entry of a topology's ``faults:`` list (docs/design.md §5), as a pydantic v2 model.

The kind is the key that is present, its value is the target (``kill``, ``stop``, ``pause``,
``link``) or the sub-mode (``partition``, ``clock``)::

    {at: 5s, kill: broker-a-0, restart_after: 20s}
    {at: 30s, partition: isolate, targets: [namesrv-0], duration: 150s}
    {at: 60s, clock: bump, targets: [namesrv-1], offset: 130s}
    {at: 90s, partition: groups, groups: [[namesrv-0], [broker-b-0]], oneway: true, duration: 60s}
    {at: 10s, link: broker-a-0, to: [namesrv], delay: 200ms, jitter: 50ms, loss: 5%, duration: 30s}

Every duration is in **cluster seconds** (``timing.scale`` turns it into wall time when the plan
is built), so a topology reads like RocketMQ's own timings whatever the scale. The model imports
nothing from the rest of the emulator: the topology loader embeds it as ``faults: list[FaultSpec]``
and reports its errors with their paths (``faults[2].at: ...``).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

FAULT_KINDS: tuple[str, ...] = ("kill", "stop", "pause", "partition", "link", "clock")
PARTITION_MODES: tuple[str, ...] = ("isolate", "halves", "majority", "majorities-ring", "bridge", "groups",
                                    "leader-alone", "leader-minority", "leader-majority")
CLOCK_MODES: tuple[str, ...] = ("bump", "strobe", "drift", "reset")

PartitionMode = Literal["isolate", "halves", "majority", "majorities-ring", "bridge", "groups",
                        "leader-alone", "leader-minority", "leader-majority"]
ClockMode = Literal["bump", "strobe", "drift", "reset"]

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|min|m|h)?\s*$")
DURATION_HELP = "a duration such as 5s, 150ms, 2m, 1h or a number of seconds"


def parse_duration(value: Any, *, signed: bool = False) -> float:
    """``"5s"`` / ``"150ms"`` / ``"2m"`` / ``"1h"`` / ``7`` / ``"7"`` -> seconds (float).

    Negative values (``"-130s"``) only with ``signed=True`` (clock offsets); a leading ``+`` is
    always accepted. Raises ``ValueError`` saying what was expected.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected {DURATION_HELP}, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        sign, number, unit = m.groups()
        seconds = float(number) * _UNIT_SECONDS[unit or "s"] * (-1.0 if sign == "-" else 1.0)
    else:
        raise ValueError(f"expected {DURATION_HELP}, got {value!r}")
    if not math.isfinite(seconds):
        raise ValueError(f"expected a finite duration, got {value!r}")
    if seconds < 0 and not signed:
        raise ValueError(f"expected a duration >= 0, got {value!r}")
    return seconds


def parse_probability(value: Any) -> float:
    """``0.05`` or ``"5%"`` -> 0.05, refusing anything outside [0, 1]."""
    if isinstance(value, bool):
        raise ValueError(f"expected a probability between 0 and 1 or a percentage like 5%, got {value!r}")
    try:
        if isinstance(value, str) and value.strip().endswith("%"):
            p = float(value.strip()[:-1]) / 100.0
        else:
            p = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a probability between 0 and 1 or a percentage like 5%, got {value!r}") from None
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"expected a probability between 0 and 1 (or 0%..100%), got {value!r}")
    return p


def parse_target_list(value: Any) -> list[str]:
    """A target expression: one string (commas allowed: ``"a,b"``) or a list of strings."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"expected a target (node name, role or selector) or a list of them, got {value!r}")
    out = [part.strip() for item in items for part in item.split(",") if part.strip()]
    if not out:
        raise ValueError("expected at least one target, got an empty list")
    return out


Targets = Annotated[list[str], WithJsonSchema({"anyOf": [{"type": "string"},
                                                        {"type": "array", "items": {"type": "string"}}],
                                               "description": "node name, role or selector, or a list of them"})]
# What a user may write (the validators turn it into float seconds / a probability).
Seconds = Annotated[float, WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}],
                                           "description": DURATION_HELP + " (cluster seconds)"})]
Probability = Annotated[float, WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0, "maximum": 1},
                                                         {"type": "string", "pattern": "%$"}]})]

# Which optional keys each kind accepts; anything else set on an entry is an error.
_ALLOWED: dict[str, set[str]] = {
    "kill": {"restart_after"},
    "stop": {"restart_after"},
    "pause": {"duration"},
    "partition": {"targets", "groups", "oneway", "duration"},
    "link": {"to", "oneway", "delay", "jitter", "loss", "duplicate", "duration"},
    "clock": {"targets", "offset", "period", "ppm", "duration"},
}
_OPTIONAL = ("targets", "groups", "to", "duration", "restart_after", "delay", "jitter", "loss",
             "duplicate", "offset", "period", "ppm")


class FaultSpec(BaseModel):
    """One scheduled fault; see the module docstring for the shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: Seconds = Field(description="start, cluster seconds from the start of the run")
    kill: Targets | None = Field(None, description="SIGKILL these nodes")
    stop: Targets | None = Field(None, description="SIGTERM these nodes (graceful shutdown)")
    pause: Targets | None = Field(None, description="SIGSTOP these nodes (SIGCONT at the end)")
    partition: PartitionMode | None = None
    link: Targets | None = Field(None, description="fault the links of these nodes")
    clock: ClockMode | None = None
    targets: Targets | None = None
    groups: list[Targets] | None = Field(None, description="partition: groups, explicit groups")
    to: Targets | None = Field(None, description="link: only links towards these nodes")
    oneway: bool = Field(False, description="partition: the first group cannot reach the second "
                                            "(not the reverse); link: only link -> to")
    duration: Seconds | None = Field(None, description="heal after this long (cluster seconds)")
    restart_after: Seconds | None = Field(None, description="kill/stop: restart after this long")
    delay: Seconds | None = None
    jitter: Seconds | None = None
    loss: Probability | None = None
    duplicate: Probability | None = None
    offset: Seconds | None = Field(None, description="clock bump: step; strobe: the second offset")
    period: Seconds | None = Field(None, description="clock strobe: switch every period")
    ppm: float | None = Field(None, description="clock drift: parts per million")

    @field_validator("at", "duration", "restart_after", "delay", "jitter", "period", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_validator("offset", mode="before")
    @classmethod
    def _signed_duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value, signed=True)

    @field_validator("loss", "duplicate", mode="before")
    @classmethod
    def _probability(cls, value: Any) -> Any:
        return None if value is None else parse_probability(value)

    @field_validator("kill", "stop", "pause", "link", "targets", "to", mode="before")
    @classmethod
    def _targets(cls, value: Any) -> Any:
        return None if value is None else parse_target_list(value)

    @field_validator("groups", mode="before")
    @classmethod
    def _groups(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, (list, tuple)) or len(value) < 2:
            raise ValueError(f"expected a list of at least two groups of targets, got {value!r}")
        return [parse_target_list(group) for group in value]

    @field_validator("ppm", mode="before")
    @classmethod
    def _ppm(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"expected a number of parts per million (e.g. 500 or -200), got {value!r}")
        return float(value)

    @model_validator(mode="after")
    def _one_kind_and_its_keys(self) -> "FaultSpec":
        present = [k for k in FAULT_KINDS if getattr(self, k) is not None]
        if len(present) != 1:
            got = ", ".join(present) if present else "none"
            raise ValueError(f"expected exactly one fault kind key out of {', '.join(FAULT_KINDS)} (got {got})")
        kind = present[0]
        extra = [k for k in _OPTIONAL if getattr(self, k) is not None and k not in _ALLOWED[kind]]
        if self.oneway and "oneway" not in _ALLOWED[kind]:
            extra.append("oneway")
        if extra:
            allowed = ", ".join(sorted(_ALLOWED[kind])) or "nothing"
            hint = ", a kill lasts until restart_after" if kind in ("kill", "stop") and "duration" in extra else ""
            raise ValueError(f"{kind}: unexpected {', '.join(extra)} ({kind} takes at, {allowed}{hint})")
        if self.duration is not None and self.duration <= 0:
            raise ValueError(f"{kind}: duration must be > 0, got {self.duration}")
        getattr(self, f"_check_{kind}", lambda: None)()
        return self

    def _check_partition(self) -> None:
        if self.partition == "groups" and self.groups is None:
            raise ValueError("partition: groups needs groups: [[...], [...]]")
        if self.partition != "groups" and self.groups is not None:
            raise ValueError(f"partition: {self.partition} takes targets, not groups (use partition: groups)")
        if self.partition == "groups" and self.targets is not None:
            raise ValueError("partition: groups takes groups, not targets")
        if self.partition == "majorities-ring" and self.oneway:
            raise ValueError("partition: majorities-ring has no first group, so it cannot be oneway")

    def _check_link(self) -> None:
        if not any((self.delay, self.jitter, self.loss, self.duplicate)):
            raise ValueError("link: expected at least one of delay, jitter, loss, duplicate (non-zero)")

    def _check_clock(self) -> None:
        need = {"bump": ["offset"], "strobe": ["offset", "period"], "drift": ["ppm"], "reset": []}[self.clock or ""]
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"clock: {self.clock} needs {' and '.join(missing)}")
        unused = [k for k in ("offset", "period", "ppm") if getattr(self, k) is not None and k not in need]
        if unused:
            raise ValueError(f"clock: {self.clock} does not take {', '.join(unused)}")
        if self.clock == "strobe" and not self.period:
            raise ValueError("clock: strobe needs a period > 0")
        if self.clock == "reset" and self.duration is not None:
            raise ValueError("clock: reset is instantaneous and takes no duration")

    @property
    def kind(self) -> str:
        """``kill`` / ``stop`` / ``pause`` / ``partition`` / ``link`` / ``clock``."""
        return next(k for k in FAULT_KINDS if getattr(self, k) is not None)

    @property
    def mode(self) -> str | None:
        """The sub-mode of a partition or clock fault, else None."""
        return self.partition or self.clock

    def describe(self) -> str:
        """Short human form for error messages: ``pause broker-a-0 at 40s``."""
        value = getattr(self, self.kind)
        what = value if isinstance(value, str) else ",".join(value)
        if self.targets:
            what += " " + ",".join(self.targets)
        return f"{self.kind} {what} at {self.at:g}s"
