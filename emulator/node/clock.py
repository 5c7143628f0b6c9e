"""The skewable wall clock of docs/design.md §3, and the one place host time becomes cluster time.

Every node reads "System.currentTimeMillis()" only through a :class:`SkewableClock`, so a clock
fault changes what RocketMQ logic *compares* (broker liveness stamps, subVersion, blackout ends)
without touching the node's schedules, which run on the monotonic clock.

The clock is a pure function of the host time and its :class:`ClockSetting`; the setting is plain
data so the fault injector can build it, send it over the control plane and record it. Settings
are in host ms (a ``+130s`` bump at scale 0.01 is a 1300 ms offset).

:class:`ClusterTime` is where ``timing.scale`` lives (trio's MockClock: scaling belongs to the
clock, not to every caller): roles see cluster ms, the runtime waits host ms.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from rmqemu.emulator.roles.common.base import Now


@dataclass(frozen=True)
class ClockSetting:
    """How a node's clock departs from the host clock.

    ``offset_ms``: a constant step (``bump``).
    ``drift_ppm``: drift since ``since_ms`` (host ms), ``drift_ppm * elapsed / 1e6`` ms.
    ``strobe_delta_ms`` / ``strobe_period_ms``: oscillate between ``offset_ms`` and
    ``offset_ms + strobe_delta_ms``, switching every period (host time, from ``since_ms``),
    shifted first as Jepsen's strobe is (a strobe shorter than a period still jumps).
    """

    offset_ms: float = 0.0
    drift_ppm: float = 0.0
    strobe_delta_ms: float = 0.0
    strobe_period_ms: float = 0.0
    since_ms: float = 0.0

    def offset_at(self, host_ms: float) -> float:
        """Total offset in ms at host time ``host_ms``."""
        elapsed = max(0.0, host_ms - self.since_ms)
        off = self.offset_ms + self.drift_ppm * elapsed / 1e6
        if self.strobe_period_ms > 0 and int(elapsed // self.strobe_period_ms) % 2 == 0:
            off += self.strobe_delta_ms
        return off

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ClockSetting":
        return cls(**{k: float(v) for k, v in data.items() if k in cls.__dataclass_fields__})


def host_ms() -> float:
    """Host wall time in ms: the ground truth every event's ``ts`` carries."""
    return time.time() * 1000.0


def mono_ms() -> float:
    """Monotonic time in ms: what periodic tasks and timeouts run on."""
    return time.monotonic() * 1000.0


@dataclass
class SkewableClock:
    """``now_ms = host_ms + offset(host_ms)``; the setting is replaced by the control plane."""

    setting: ClockSetting = field(default_factory=ClockSetting)
    host: Callable[[], float] = host_ms

    def now_ms(self) -> float:
        return self.at(self.host())

    def at(self, host_now_ms: float) -> float:
        """The node's clock when the host's reads ``host_now_ms``: one host reading gives both, so a
        line's ``ts`` and ``local_ms`` (and a clock fault's offset) never differ by a descheduling."""
        return host_now_ms + self.setting.offset_at(host_now_ms)

    def set(self, setting: ClockSetting) -> None:
        self.setting = setting


@dataclass(frozen=True)
class ClusterTime:
    """Host time <-> cluster (RocketMQ) time for one node under ``timing.scale``.

    A cluster ms lasts ``scale`` host ms. Monotonic time is simply divided by the scale (its
    origin means nothing). Wall time is stretched around ``anchor_ms``, the run's start in host
    wall ms, which every node of a run shares (the launcher writes it into each spec): so two
    nodes' ``wall_ms`` for the same host instant agree, and a cluster wall instant is
    ``anchor + host ms since the anchor / scale``. A skewed host wall (a clock fault's offset,
    drift, strobe) is stretched the same way, so a host offset of ``130000 * scale`` ms is
    130000 cluster ms: what RocketMQ logic compares with its 120000 ms expiry.

    ``min_request_wall_ms`` is the node's wall-clock floor for every request timeout
    (``timing.minRequestTimeoutWallMs``, docs/design.md §3): at scale 0.01 the 3000 ms
    ``mqClientApiTimeout`` is 30 wall ms, inside a loaded host's scheduling noise, and a route
    query that times out keeps a stale route for another 30 cluster s. 0 (the default here, and
    in hand-made runtimes of tests) is exact scaling.
    """

    scale: float = 1.0
    anchor_ms: float = 0.0
    min_request_wall_ms: float = 0.0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"scale must be > 0, got {self.scale!r}")
        if not self.min_request_wall_ms >= 0:
            raise ValueError(f"min_request_wall_ms must be >= 0, got {self.min_request_wall_ms!r}")

    def now(self, host_mono_ms: float, skewed_wall_ms: float) -> Now:
        """What a role is handed: cluster ms, plus the host monotonic reading for wall measurements."""
        return Now(mono_ms=host_mono_ms / self.scale,
                   wall_ms=self.anchor_ms + (skewed_wall_ms - self.anchor_ms) / self.scale,
                   host_mono_ms=host_mono_ms)

    def host_ms(self, cluster_ms: float, min_wall_ms: float = 0.0) -> float:
        """A cluster duration in host ms, never below the wall-clock floor ``min_wall_ms``."""
        return max(cluster_ms * self.scale, min_wall_ms)

    def request_host_ms(self, timeout_ms: float, min_wall_ms: float = 0.0) -> float:
        """A request's timeout in host ms: ``max(timeout * scale, node floor, the request's own
        floor)``. The request's own floor is the producer's send budget (``minSendTimeoutWallMs``,
        what is left of it for a retry); the node floor covers every request alike, sends too."""
        return max(timeout_ms * self.scale, self.min_request_wall_ms, min_wall_ms)

    def host_wall_ms(self, cluster_wall_ms: float) -> float:
        """A role's wall instant (a liveness stamp in its ``state``) as a (skewed) host wall
        instant, comparable with events' ``ts``: the inverse of ``Now.wall_ms``."""
        return self.anchor_ms + (cluster_wall_ms - self.anchor_ms) * self.scale


class FakeClock:
    """A hand-driven clock for tests: one value serves as host, wall and monotonic time."""

    def __init__(self, start_ms: float = 1_000_000.0) -> None:
        self.current_ms = start_ms

    def __call__(self) -> float:
        return self.current_ms

    def advance(self, ms: float) -> float:
        self.current_ms += ms
        return self.current_ms
