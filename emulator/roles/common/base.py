"""The contract between node logic and the node runtime.

A role (NameServer, broker, producer, consumer) is a state machine: it takes a message, a timer
tick or a channel event together with ``now`` and returns a list of *actions*. It never touches a
socket, a file or the real clock; the runtime loop (``emulator/node/runtime.py``) performs the actions.
That is what lets unit tests drive the RocketMQ logic with a fake clock and no sockets: call the
role, inspect the actions, and feed ``Request.on_reply`` whatever response the test wants.

Time: a role speaks RocketMQ's own (cluster) milliseconds and holds no ``timing.scale``. The
instants in :class:`Now` and every duration in an action (``Every``, ``After``,
``Request.timeout_ms``) are cluster ms; the node runtime converts between cluster and host time
in one place (``emulator.node.clock.ClusterTime``). Deliberate wall-clock floors are fields of
the actions (``Request.min_timeout_wall_ms``, ``Every.min_period_wall_ms``) that the runtime applies.

Addresses are RocketMQ-style ``"127.0.0.1:<port>"`` strings (what a broker registers and what a
route carries). A *channel* is the opaque id of one inbound connection as the server side sees it
(Netty's ``Channel``): replies and server-initiated oneways (NOTIFY_CONSUMER_IDS_CHANGED) go back
on it, and it is what closes when the peer process dies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Union

from rmqemu.emulator.protocol import ChannelEvent, Frame
from rmqemu.events import check as check_event


@dataclass(frozen=True)
class Now:
    """The clocks a role may read (docs/design.md §3), as the runtime's ``ClusterTime`` gives them.

    ``mono_ms``: monotonic, in cluster ms; for timeouts, schedules and the latencies RocketMQ's own
    logic compares with its thresholds (``MQFaultStrategy``'s latency table).
    ``wall_ms``: the node's skewable clock in cluster ms, i.e. RocketMQ's
    ``System.currentTimeMillis()``: ``anchor + (skewed host wall - anchor) / scale`` with the run's
    start as the anchor shared by every node, so instants stay comparable across nodes and a
    clock bump of ``+130 s`` (cluster) moves it by 130000.
    ``host_mono_ms``: the host's monotonic clock, unscaled; only for what an event reports in wall
    ms (``send.latency_ms``) and for measuring against a wall-clock floor (the producer's
    ``minSendTimeoutWallMs`` send budget). RocketMQ logic never reads it.
    """

    mono_ms: float
    wall_ms: float
    host_mono_ms: float


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Inbound:
    """A request or oneway that arrived on an inbound channel from node ``peer``; ``addr`` is the
    peer's socket address when the transport knows it (a real client's connection)."""

    channel: str
    peer: str
    frame: Frame
    addr: str | None = None


# ----------------------------------------------------------------------------- actions

ReplyHandler = Callable[[Frame | None, Now], list["Action"]]


@dataclass(frozen=True)
class Reply:
    """Send ``frame`` on inbound channel ``channel`` (a response, or a server-side oneway)."""

    channel: str
    frame: Frame


@dataclass(frozen=True)
class Oneway:
    """Send ``frame`` (flag ONEWAY) to the node listening at ``addr``; no answer expected."""

    addr: str
    frame: Frame


@dataclass(frozen=True)
class Request:
    """Send a request to ``addr``; ``on_reply(response, now)`` runs exactly once.

    ``response`` is ``None`` when the timeout elapsed or the frame could not be sent (RocketMQ's
    RemotingTimeoutException / RemotingConnectException both surface as "no answer"). The
    runtime assigns the opaque id.

    ``timeout_ms`` is in cluster ms; the request waits ``max(timeout_ms * scale, the node's
    timing.minRequestTimeoutWallMs, min_timeout_wall_ms)`` host ms: every request is kept above
    the host's scheduling noise by the node floor, and a role can ask for more (the producer's
    ``minSendTimeoutWallMs`` send budget) without knowing the scale.
    """

    addr: str
    frame: Frame
    timeout_ms: float
    on_reply: ReplyHandler
    min_timeout_wall_ms: float = 0.0
    held: bool = False  # a long poll the server holds (a pull, an HA transfer): a graceful stop does not wait for it


@dataclass(frozen=True)
class Emit:
    """Write one event (docs/design.md §6). The runtime adds ``ts``, ``node`` and ``local_ms``.

    The kind and the field names must be in the event registry (:mod:`rmqemu.events`): an
    unknown one raises ``ValueError`` here, where the bug is, instead of reaching a log that the
    docs and the report do not know."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)
    node: str | None = None  # the line's node when not this one: a real client the role writes for

    def __post_init__(self) -> None:
        check_event(self.kind, self.fields)


@dataclass(frozen=True)
class Log:
    """One line for a person in the node's log (``logs/<node>.log``): what an operator must
    see without reading the events, such as a damaged store file."""

    text: str


@dataclass(frozen=True)
class Persist:
    """Replace a file under the node's store dir atomically (MixAll.string2File: tmp, bak, rename)."""

    relpath: str
    text: str


@dataclass(frozen=True)
class Append:
    """Append lines to a file under the node's store dir (e.g. a commit log), flushed at once."""

    relpath: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Every:
    """Register a periodic task: ``on_timer(name)`` after ``initial_ms`` then every ``period_ms``.

    Runs on the monotonic clock at a fixed rate, like ``scheduleAtFixedRate``. Both are cluster
    ms; ``min_period_wall_ms`` floors both in host ms (a task that must not run more often than
    the host can keep up with, e.g. the producer workload's tick).
    """

    name: str
    initial_ms: float
    period_ms: float
    min_period_wall_ms: float = 0.0


@dataclass(frozen=True)
class After:
    """A one-shot timer: ``on_timer(name)`` after ``delay_ms`` (cluster ms). A new After with the
    same name replaces a pending one."""

    name: str
    delay_ms: float


@dataclass(frozen=True)
class Cancel:
    """Cancel a pending timer (periodic or one-shot) by name."""

    name: str


@dataclass(frozen=True)
class CloseChannel:
    """Close an inbound channel (the namesrv's expiry scan closes the expired broker's channel)."""

    channel: str


@dataclass(frozen=True)
class Exit:
    """Stop the node after the actions before it are done."""

    code: int = 0


Action = Union[Reply, Oneway, Request, Emit, Log, Persist, Append, Every, After, Cancel, CloseChannel, Exit]


# ----------------------------------------------------------------------------- the role interface


class StoreReader(Protocol):
    """Read-only access to the node's store dir, given to a role at construction (restore)."""

    def __call__(self, relpath: str) -> str | None: ...


class Role:
    """Base class of node logic. Subclasses override what they need; defaults do nothing.

    ``start`` runs once when the node's socket is bound and it is ready (register periodic
    tasks with :class:`Every` there); ``stop`` runs on a graceful shutdown (SIGTERM or the
    launcher's shutdown command): the runtime performs its actions, waits for the requests it
    returned to be answered or to time out, then exits.
    """

    role: str = "node"

    def __init__(self, name: str, addr: str) -> None:
        self.name = name
        self.addr = addr

    def start(self, now: Now) -> list[Action]:
        return []

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        return []

    def on_timer(self, name: str, now: Now) -> list[Action]:
        return []

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        return []

    def on_clock(self, now: Now) -> list[Action]:
        """The node's wall clock was set (a ``clock`` fault or its heal): ``now.wall_ms`` jumped.
        Timers run on the monotonic clock, so a role that armed one for a wall-clock instant
        re-arms it here (the broker's delay levels, emulator/roles/broker/schedule.py)."""
        return []

    def on_peers(self, peers: dict[str, str], now: Now) -> list[Action]:
        """The run's node table arrived with the link table (``set_links``): where every node
        listens now, by name. A DLedger peer learns its group's addresses here."""
        return []

    def stop(self, now: Now) -> list[Action]:
        return []

    def state(self) -> dict[str, Any]:
        """A JSON-able snapshot for the control plane's ``state`` query and for tests."""
        return {}
