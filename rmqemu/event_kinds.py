"""Every event kind rmqemu writes, as data (the registry's content; :mod:`rmqemu.events` is
its interface). Kind and field names are a contract: the Spark report reads them, so renaming
one here is renaming it in every run log. Order matters only for ``docs/events.md``.
"""

from __future__ import annotations

from rmqemu import event_kinds_delay as delay_kinds
from rmqemu import event_kinds_dledger as dledger_kinds
from rmqemu import event_kinds_pop as pop_kinds
from rmqemu import event_kinds_proxy as proxy_kinds
from rmqemu import event_kinds_tx as tx_kinds
from rmqemu import event_order
from rmqemu.event_types import (
    BOOL,
    FLOAT,
    INT,
    LINKS,
    LONG,
    QUEUES,
    STR,
    STRS,
    Field,
    Kind,
    ListOf,
    MapOf,
    Section,
    Struct,
)

# ----------------------------------------------------------------------------- common fields

COMMON = (
    Field("ts", FLOAT, "host wall clock, float ms since the epoch (`time.time()`): comparable across processes",
          required=True),
    Field("node", STR, "the node's name (`namesrv-0`, `broker-a-1`, `pg-1-0`, ...); `injector` or `launcher` in "
          "`faults.jsonl`", required=True),
    Field("kind", STR, "one of the kinds below", required=True),
    Field("local_ms", FLOAT, "the node's own, possibly skewed, clock (`rmqemu skew`), on lines a node writes itself",
          ext=True),
)

# ----------------------------------------------------------------------------- structs

QUEUE_DATA = Struct("queue_data", (
    Field("broker", STR, "broker name", required=True),
    Field("read", INT, "readQueueNums", required=True),
    Field("write", INT, "writeQueueNums", required=True),
    Field("perm", INT, "PermName bits: 4 read, 2 write, 1 inherit", required=True),
))

CLOCK_SETTING = Struct("clock setting", tuple(
    Field(name, FLOAT, required=True)
    for name in ("offset_ms", "drift_ppm", "strobe_delta_ms", "strobe_period_ms", "since_ms")))

FAULT_PARAMS = Struct("params", (
    Field("signal", INT, "kill/stop/pause: the signal sent"),
    Field("restart_after_ms", FLOAT, "kill/stop: restart after this long (null: never)", nullable=True),
    Field("after_ms", FLOAT, "restart: the kill's `restart_after_ms`", nullable=True),
    Field("mode", STR, "partition: `groups`/`isolate`/`halves`/`majority`/`bridge`/`majorities-ring`, or a "
          "DLedger group's `leader-alone`/`leader-minority`/`leader-majority` (`groups`: the leader's side, "
          "leader first, then the rest); clock: `bump`/`strobe`/`drift`/`reset`"),
    Field("oneway", BOOL, "partition: only the listed direction is cut"),
    Field("links", LINKS, "partition/link: the directed links `[[src, dst], ...]`"),
    Field("groups", ListOf(STRS), "partition: the node groups"),
    Field("delay_ms", FLOAT, "link"), Field("jitter_ms", FLOAT, "link"),
    Field("loss", FLOAT, "link: probability"), Field("duplicate", FLOAT, "link: probability"),
    Field("offset_ms", FLOAT, "clock: the bump"), Field("drift_ppm", FLOAT, "clock"),
    Field("strobe_delta_ms", FLOAT, "clock"), Field("strobe_period_ms", FLOAT, "clock"),
    Field("since_ms", FLOAT, "clock strobe/drift: when it began (host ms)"),
    Field("refused", MapOf(STR), "targets that could not be hit, and why: a node that could not be signalled, "
          "or a role term (`leader:broker-a`) with no leader when the step fired", ext=True),
    Field("gone", MapOf(STR), "pause: targets that exited while paused", ext=True),
    Field("resume_failed", MapOf(STR), "pause: targets that could not be resumed", ext=True),
))

DRAIN_LAG = Struct("drain lag", (
    Field("group", STR, "consumer group", required=True),
    Field("topic", STR, "a subscribed topic or `%RETRY%<group>`", required=True),
    Field("broker", STR, "broker name (its master was read)", required=True),
    Field("queue_id", INT, required=True),
    Field("lag", LONG, "the master's max offset minus the group's consumed offset", required=True),
    Field("consumer", STR, "BROADCASTING: the instance behind (each consumes every message)"),
))

# ----------------------------------------------------------------------------- kinds

NODES = Section("Nodes", (
    Kind("node.start", "every node, once ready", "the node is bound and serving", (
        Field("role", STR, "namesrv/broker/producer/consumer", required=True),
        Field("pid", LONG, required=True),
        Field("addr", STR, "its data-plane address", required=True, ext=True),
        Field("remoting_addr", STR, "namesrvs and brokers with remoting on: where real clients connect", ext=True),
        Field("grpc_addr", STR, "proxies: their gRPC port, where RocketMQ 5 clients connect", ext=True),
        Field("broker", STR, "brokers"), Field("broker_id", INT, "brokers: 0 master, 1.. slaves"),
        Field("group", STR, "clients", ext=True),
    )),
    Kind("node.exit", "the launcher, for every node it sees exit (a kill: as the injector's kill takes "
         "effect); the node itself only for code 3",
         "the process ended. A `stop` fault's SIGTERM is handled: the node shuts down gracefully and exits "
         "with code 0", (
             Field("role", STR, required=True), Field("pid", LONG, required=True),
             Field("code", INT, "0 clean, 3 the launcher went away, 4 the role raised in `start`, 2 unreadable "
                   "spec, anything else: a crash"),
             Field("signal", INT, "instead of `code`: 9 for a kill, written when the kill took effect, and also 9 "
                   "for a node that did not shut down within its grace at the end of a run"),
             Field("broker", STR, "brokers"), Field("broker_id", INT, "brokers"),
             Field("reason", STR, "code 3: how the launcher was lost", ext=True),
             Field("addr", STR, "code 3 (as in `node.start`)", ext=True),
             Field("group", STR, "code 3, clients", ext=True),
         )),
    Kind("node.clock", "a node whose clock was set", "the launcher or injector changed the node's clock", (
        Field("setting", CLOCK_SETTING, "the new setting", required=True),
        Field("offset_ms", FLOAT, "local minus host, right after the change", required=True),
    ), ext=True),
    Kind("node.lag", "every node, at most once per window (`max(1 wall s, 10 cluster s)`) in which a timer "
         "fired, and once more as it stops",
         "how late its timers ran (docs/design.md §9): lateness is when a timer ran minus when it was due, in wall "
         "ms. The window is `[ts - window_ms, ts]`; a window overlapping a pause of the node shows the pause, "
         "not the host, and timing health ignores it", (
             Field("window_ms", FLOAT, "the window's length, wall ms", required=True),
             Field("timers", INT, "timer firings in the window", required=True),
             Field("p50_ms", FLOAT, "median lateness, wall ms", required=True),
             Field("p99_ms", FLOAT, "99th percentile (nearest rank) of lateness, wall ms", required=True),
             Field("max_ms", FLOAT, "largest lateness, wall ms", required=True),
         )),
    Kind("node.error", "a node whose role raised", "a bug in rmqemu: the node goes on (an error in the role's "
         "`start` makes it exit with code 4), `launch` says so on stderr as it comes and the run broke (exit 3; "
         "`emulator.Cluster` and `start_cluster` raise ClusterError after the run; `status` names the node)", (
             Field("error", STR, "`Type: message`", required=True),
         ), ext=True),
    Kind("wire.bad_frame", "any node", "a frame that could not be decoded (`reason`: not JSON, too large, "
         "nested too deep, a number out of range, a bad header field), or a request whose header its handler "
         "refused (`code`, `error`; answered SYSTEM_ERROR); dropped. Both are rate-limited (each on its own): at "
         "most one line per peer per second and 20 per second in all", (
             Field("peer", STR, required=True), Field("reason", STR),
             Field("code", INT, "the request code"), Field("error", STR),
             Field("suppressed", INT, "frames of the same sort from this peer dropped without a line since its "
                   "previous one", ext=True),
         ), ext=True),
    Kind("control.refused", "any node (`events/<node>.jsonl`), the launcher (`faults.jsonl`), the `rmqemu up` "
         "supervisor (a JSON line in `supervisor.log`)",
         "a control message or supervisor request that failed its check (signature, sequence number or nonce "
         "replayed, shape; docs/design.md §2), ignored. Rate-limited like `wire.bad_frame`", (
             Field("reason", STR, required=True),
             Field("peer", STR, "launcher and supervisor: the connection's routing id (`?<hex>`)", ext=True),
             Field("suppressed", INT, "refusals of this peer dropped without a line since its previous one",
                   ext=True),
         ), ext=True),
))

NAMESRV = Section("NameServer", (
    Kind("ns.broker", "namesrv", "a broker entered or left the namesrv's live table", (
        Field("broker_addr", STR, required=True), Field("broker", STR, required=True),
        Field("broker_id", INT, required=True),
        Field("change", STR, "`register` (new to this namesrv), `role` (a live address registered under "
              "another `broker_id`: a DLedger peer promoted or demoted), `replaced` (this address held `broker_id` "
              "and another one registered under it), `unregister`, `channel_destroy` (its channel closed or idled "
              "out: `onChannelDestroy`), `expired` (no registration within `brokerChannelExpiredTime`, scaled)",
              required=True),
    )),
    Kind("ns.route", "namesrv", "the topic's route changed; written after any change of either field", (
        Field("topic", STR, required=True),
        Field("queue_datas", ListOf(QUEUE_DATA), "one per broker name, sorted (empty: the topic is gone)",
              required=True),
        Field("masters", STRS, "broker names whose master address it holds", required=True),
    )),
))

BROKER = Section("Broker", (
    Kind("broker.topic", "broker", "the broker's config of a topic was created, changed, restored or deleted; a "
         "deleted topic has zero queues and `perm` 0", (
             Field("broker", STR, required=True), Field("broker_id", INT, required=True),
             Field("topic", STR, required=True), Field("read_queues", INT, required=True),
             Field("write_queues", INT, required=True), Field("perm", INT, required=True),
             Field("how", STR, "`startup` (system topics, TBW102), `auto` (created in the send path from TBW102), "
                   "`admin` (UPDATE_AND_CREATE_TOPIC), `restore` (from `topics.json` after a restart), `sync` "
                   "*(ext, slaves: copied from the master)*", required=True),
             Field("deleted", BOOL, "`true` on a deleted topic", ext=True),
         )),
    Kind("broker.ha", "broker (master and slave)", "the replication connection came up or went down", (
        Field("change", STR, "master side `slave_connected` / `slave_disconnected`, slave side `connected` / "
              "`disconnected`", required=True),
        Field("slave", STR, "master side: the slave node"), Field("master", STR, "slave side: the master's address"),
        Field("offset", LONG, "the slave's acknowledged (master side) or own (slave side) commit-log offset",
              required=True),
        Field("master_offset", LONG, "on connecting: the master's max offset", nullable=True),
        Field("reason", STR, "on disconnecting: why"),
    ), ext=True),
    Kind("broker.store", "broker (master and slave)", "a queue file read back at start, or a replicated "
         "transfer, held something that is not a stored message (docs/design.md §6, \"JSON-lines files\"); "
         "also a line in `logs/<node>.log` and a warning from `rmqemu launch`", (
             Field("queue_file", STR, "the queue file, relative to the broker's store directory", required=True),
             Field("problem", STR, "`bad_line`: a complete line that is no stored message of this queue, or `gap`: "
                   "queue offsets with no message, served as lost while later messages keep their offsets",
                   required=True),
             Field("reason", STR, "what was wrong, for a person", required=True),
             Field("line", INT, "the 1-based line number in the file (absent for a transfer)"),
             Field("offset", LONG, "gap: the first queue offset without a message"),
             Field("count", INT, "gap: how many offsets"),
         ), ext=True),
))

CLIENTS = Section("Clients (a real client's lines are written by the namesrv or broker that answered it)", (
    Kind("client.route", "producer, consumer; the namesrv for a real client", "the client applied a route it "
         "fetched for a topic (a real client: the route it was answered)", (
        Field("topic", STR, required=True),
        Field("source", STR, "the namesrv node, or `TBW102` when the route came from the createTopicKey",
              required=True),
        Field("publish_queues", QUEUES, "the publish view (consumers write what a producer would build from the "
              "same route, so the staleness metrics treat consumers and producers alike)", required=True),
        Field("changed", BOOL, "the view differs from the previous one", required=True),
        Field("group", STR, "empty for a real client (a route query does not name a group)", required=True, ext=True),
        Field("view", STR, "producers: `publish`, a proxy's own cached view: `proxy`", ext=True),
        Field("subscribe_queues", QUEUES, "consumers: the subscribe view (readable queues, slaves included)",
              ext=True),
    )),
    Kind("client.heartbeat", "the broker, for a real client", "the broker answered a real client's heartbeat", (
        Field("client_id", STR, "the clientID it sent", required=True), Field("producer_groups", STRS, required=True),
        Field("consumer_groups", STRS, required=True), Field("code", INT, "the answer's code", required=True),
    ), ext=True),
))

PRODUCER = Section("Producer", (
    Kind("send", "producer; the broker for a real client", "one line per attempt (a real client: per send that "
         "reached the broker)", (
        Field("msg_id", STR, "the UNIQ_KEY (of the first message of a batch)", required=True),
        Field("topic", STR, required=True), Field("broker", STR, "null: no route", required=True, nullable=True),
        Field("queue_id", INT, required=True, nullable=True),
        Field("attempt", INT, "1-based", required=True),
        Field("outcome", STR, "`ok`/`timeout`/`error`/`no_route`", required=True),
        Field("code", INT, "the response code, null without an answer", required=True, nullable=True),
        Field("latency_ms", FLOAT, "wall ms, null for an attempt that got no answer on the wire (no route, no broker "
              "address, oneway)", required=True, nullable=True),
        Field("broker_id", INT, "0 (masters only)", required=True, nullable=True, ext=True),
        Field("broker_addr", STR, "the broker address the attempt went to, or null when none was found (a real "
              "client's: the broker that answered)", nullable=True, ext=True),
        Field("group", STR, required=True, ext=True),
        Field("mode", STR, "sync/async/oneway, or `wire` for a real client's send, written by the broker that "
              "answered it", required=True, ext=True),
        Field("error", STR, "RocketMQ's message", ext=True),
        Field("msg_ids", STRS, "a batch", ext=True),
    ) + event_order.SEND_FIELDS + delay_kinds.SEND_FIELDS + tx_kinds.SEND_FIELDS + proxy_kinds.SEND_FIELDS),
    Kind("send.fail", "producer", "once per message that was given up", (
        Field("msg_id", STR, required=True), Field("topic", STR, required=True),
        Field("group", STR, required=True), Field("mode", STR, required=True),
        Field("attempts", INT, required=True), Field("code", INT, required=True, nullable=True),
        Field("error", STR, "e.g. `No route info of this topic: T`", required=True),
        Field("msg_ids", STRS, "a batch"),
    ) + event_order.SEND_FIELDS + delay_kinds.SEND_FIELDS + tx_kinds.SEND_FIELDS, ext=True),
))

CONSUMER = Section("Consumer", (
    Kind("rebalance", "consumer", "the queues of a topic this consumer took in a rebalance", (
        Field("group", STR, required=True), Field("topic", STR, required=True),
        Field("cid", STR, "own client id", required=True),
        Field("cids", STRS, "all, as the broker listed them", required=True),
        Field("strategy", STR, "the allocation strategy, or `BROADCASTING`", required=True),
        Field("allocated", QUEUES, required=True),
    )),
    Kind("pull", "consumer; the broker for a real client", "one pull answered, timed out or not sent (no address)", (
        Field("group", STR, required=True), Field("topic", STR, required=True),
        Field("broker", STR, required=True), Field("queue_id", INT, required=True),
        Field("code", INT, "e.g. 24 SUBSCRIPTION_NOT_EXIST, null without an answer", required=True, nullable=True),
        Field("count", INT, "messages received", required=True, ext=True),
        Field("offset", LONG, "the queue offset asked for", ext=True),
        Field("broker_id", INT, "1 when pulled from the slave", ext=True),
        Field("addr", STR, ext=True),
        Field("error", STR, "no broker address", ext=True),
    )),
    Kind("consume", "consumer; the broker for a real client", "messages handed to the listener (a real client: "
         "delivered by a pull, as the broker sees it)", (
        Field("group", STR, required=True), Field("topic", STR, required=True),
        Field("broker", STR, required=True), Field("queue_id", INT, required=True),
        Field("msg_ids", STRS, "the ones consumed: UNIQ_KEYs, else the ids their sends were acked with", required=True),
        Field("reconsume_later", STRS, "the ones the listener failed (`fail_rate`)", ext=True),
    ) + event_order.CONSUME_FIELDS + proxy_kinds.CONSUME_FIELDS),
))

_FAULT = (
    Field("fault_id", STR, "`f1`, ..., and `f1.restart` for the restart after a kill/stop", required=True),
    Field("fault", STR, "kill/stop/pause/partition/link/clock/restart", required=True),
    Field("targets", STRS, required=True),
)
FAULTS = Section("Faults (`faults.jsonl`)", (
    Kind("fault.start", "injector", "the fault took effect: `ts` is after the nodes' acks", _FAULT + (
        Field("params", FAULT_PARAMS, required=True),
        Field("error", STR, "its effect was interrupted or not acknowledged (the fault is active anyway)",
              ext=True),
    )),
    Kind("fault.end", "injector", "the fault was healed: `ts` when the heal took effect", _FAULT + (
        Field("params", FAULT_PARAMS, "as in `fault.start`", required=True),
        Field("reason", STR, "scheduled, interactive, heal, heal_all, instant, `reset by <fault_id>`",
              required=True, ext=True),
        Field("restarted", BOOL, "kills/stops", ext=True),
        Field("not_restarted", STRS, "nodes whose restart failed", ext=True),
        Field("error", STR, ext=True),
    )),
    Kind("run.start", "launcher", "no fields: every node said ready (the cluster is up). Timing health is "
         "judged from it on: spawning a cluster loads the host by itself",
         ext=True),
    Kind("run.stop", "launcher", "no fields: the producers have stopped (the launcher's shutdown began with "
         "them, after the faults were healed); then the drain (`run.drain`), then consumers, brokers (which "
         "unregister) and namesrvs stop. The report measures route views and acks up to it, not through the "
         "shutdown", ext=True),
    Kind("run.drain", "launcher", "the end-of-run drain after `run.stop`: how long the launcher waited for every "
         "consumer group to consume up to each master's max offset of every queue it subscribes "
         "(`%RETRY%<group>` included), read from the masters' committed consumer offsets (a BROADCASTING "
         "group: each live instance's own offsets); bounded by `timing.drainTimeout`. Not written when the "
         "run was interrupted before the shutdown, or ended by an error", (
             Field("completed", BOOL, "every group caught up within the bound", required=True),
             Field("waited_ms", FLOAT, "wall ms from the drain's start to its end", required=True),
             Field("timeout_ms", FLOAT, "the bound in wall ms (`timing.drainTimeout` x scale)", required=True),
             Field("lag_total", LONG, "messages left behind: the sum of `lag` over every queue", required=True),
             Field("lag_left", ListOf(DRAIN_LAG), "the queues left behind (at most 50, largest lag first)",
                   required=True),
             Field("unreadable", STRS, "masters whose offsets could not be read (dead, or no answer): "
                   "their queues count as not drained", required=True),
             Field("interrupted", BOOL, "a signal (Ctrl-C, SIGTERM) cut the drain short", ext=True),
         ), ext=True),
    Kind("fault.error", "injector (plan)", "a plan step that failed under `continue_on_error`, or whose role "
         "terms (`leader:broker-a`) found nothing to hit when it fired (its `targets` are then the terms), skipped",
         _FAULT + (Field("action", STR, "`start`/`stop`", required=True), Field("error", STR, required=True)),
         ext=True),
))

SECTIONS: tuple[Section, ...] = (NODES, NAMESRV, BROKER, CLIENTS, PRODUCER, CONSUMER, event_order.SECTION,
                                 delay_kinds.DELAY, dledger_kinds.DLEDGER, tx_kinds.TRANSACTIONS, pop_kinds.POP,
                                 proxy_kinds.PROXY, FAULTS)
