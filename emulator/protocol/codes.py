"""RocketMQ 4.9's remoting numbers: request and response codes, permissions, well-known names
(docs/rocketmq-model.md §5)."""

from __future__ import annotations

from enum import IntEnum

FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class RequestCode(IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37  # producer -> master, oneway: commit or roll back a half (docs/rocketmq-model.md §9)
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39  # master -> a producer of the half's group, oneway: the check-back
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43  # a slave's SlaveSynchronize asks its master (docs/rocketmq-model.md §2.1)
    GET_ALL_DELAY_OFFSET = 45  # the same, for the delay offsets (docs/rocketmq-model.md §2.9)
    GET_TIMER_CHECK_POINT = 60  # the same, 5.x, for the timer store's checkpoint (docs/rocketmq-model.md §10.4)
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    QUERY_DATA_VERSION = 322
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_TOPIC_CONFIG = 351  # RocketMQ 5: one topic's config with its attributes (docs/rocketmq-model.md §10.5)
    # RocketMQ 5's POP consumption, not in 4.9.4: receive, ack, lease renewal (docs/rocketmq-model.md §10.2)
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    CHANGE_INVISIBLE_TIME = 200053


class EmulatorCode(IntEnum):
    """Request codes internal to the emulator -- **not** RocketMQ RequestCodes.

    RocketMQ's HA replication runs over its own TCP port (``haListenPort``, listenPort + 1) with a
    raw framing of its own (8-byte offset reports up, offset + size + commit-log bytes down). The
    emulator has one data-plane address per node, so that traffic is carried as requests with
    these codes, chosen far outside RocketMQ's RequestCode numbers.
    """

    HA_TRANSFER = 90001  # slave -> master: "my max commit-log offset is X, send me what follows"
    # DLedger's own RPCs between the peers of a group (emulator/roles/dledger/wire.py)
    DLEDGER_VOTE = 90011
    DLEDGER_HEARTBEAT = 90012
    DLEDGER_PUSH = 90013
    DLEDGER_LEADERSHIP_TRANSFER = 90014
    # one message of a gRPC call on a proxy's gRPC port (docs/design.md §2, "The gRPC port")
    GRPC = 90100


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    INVALID_PARAMETER = 29  # RocketMQ 5: an admin request's bad parameter, a POP out of range
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    NO_MESSAGE = 208  # RocketMQ 5: an ack or renewal of an offset outside the queue
    POLLING_FULL = 209  # RocketMQ 5: too many POPs held
    POLLING_TIMEOUT = 210  # RocketMQ 5: a POP found nothing within its pollTime


class ClientErrorCode(IntEnum):
    CONNECT_BROKER_EXCEPTION = 10001
    ACCESS_BROKER_TIMEOUT = 10002
    BROKER_NOT_EXIST_EXCEPTION = 10003
    NO_NAME_SERVER_EXCEPTION = 10004
    NOT_FOUND_TOPIC_EXCEPTION = 10005


class Perm:
    """PermName (docs/rocketmq-model.md §2.2)."""

    PRIORITY = 8
    READ = 4
    WRITE = 2
    INHERIT = 1

    @staticmethod
    def readable(perm: int) -> bool:
        return bool(perm & Perm.READ)

    @staticmethod
    def writable(perm: int) -> bool:
        return bool(perm & Perm.WRITE)

    @staticmethod
    def inherited(perm: int) -> bool:
        return bool(perm & Perm.INHERIT)

    @staticmethod
    def to_string(perm: int) -> str:
        """``perm2String``: three chars R/W/X or ``-``."""
        return (
            ("R" if perm & Perm.READ else "-")
            + ("W" if perm & Perm.WRITE else "-")
            + ("X" if perm & Perm.INHERIT else "-")
        )


MASTER_ID = 0
AUTO_CREATE_TOPIC_KEY = "TBW102"
