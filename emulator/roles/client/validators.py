"""Client-side checks and exceptions: ``Validators`` / ``TopicValidator`` (docs/rocketmq-model.md §3.5) and the
shape of RocketMQ's ``MQClientException`` messages (docs/rocketmq-model.md §3.2 step 4).

A failed check raises :class:`MQClientError`; the producer turns it into a ``send.fail`` event
with the exception's ``code`` (``responseCode``) and ``message`` (its description).
"""

from __future__ import annotations

from rmqemu.emulator.protocol import FAQ_SUFFIX, ResponseCode

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
VALID_PATTERN = "^[%|a-zA-Z0-9_-]+$"
_VALID_CHARS = frozenset("%|-_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
DEFAULT_FAQ_URL = "\nFor more information, please visit the url, http://rocketmq.apache.org/docs/faq/"

# TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET as of 4.9.4 (docs/rocketmq-model.md §2.4 step 3).
NOT_ALLOWED_SEND_TOPICS = frozenset({
    "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
})


class MQClientError(Exception):
    """``MQClientException``: ``code`` is its responseCode (-1 when built from a plain message).

    ``message`` is the description the emulator logs; ``str()`` is Java's ``getMessage()``:
    ``"CODE: <code>  DESC: <msg>"`` for coded exceptions, otherwise the message with the default
    FAQ URL attached unless it already carries a ``"\\nSee "`` suggestion. ``coded=False`` is
    ``new MQClientException(msg, null)`` followed by ``setResponseCode(code)`` (the "No route
    info" and "No name server" errors): a code, but the plain message.
    """

    def __init__(self, code: int, message: str, *, coded: bool | None = None) -> None:
        self.code = code
        self.message = message
        if not (code != -1 if coded is None else coded):
            text = message if "\nSee " in message else message + DEFAULT_FAQ_URL
        else:
            text = f"CODE: {code}  DESC: {message}"
        super().__init__(text)


def no_route_error(topic: str) -> MQClientError:
    """docs/rocketmq-model.md §3.2 step 4: the producer's answer when no publish info has a queue."""
    return MQClientError(10005, f"No route info of this topic: {topic}{FAQ_SUFFIX}", coded=False)


def no_name_server_error() -> MQClientError:
    return MQClientError(10004, f"No name server address, please set it.{FAQ_SUFFIX}", coded=False)


def check_topic(topic: str | None) -> None:
    """``Validators.checkTopic`` in 4.9.4 order: blank, length, characters (all code -1)."""
    if topic is None or not topic.strip():
        raise MQClientError(-1, "The specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MQClientError(-1, f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if any(ch not in _VALID_CHARS for ch in topic):
        raise MQClientError(
            -1, f"The specified topic[{topic}] contains illegal characters, allowing only {VALID_PATTERN}"
        )


def check_group(group: str | None) -> None:
    if group is None or not group.strip():
        raise MQClientError(-1, "the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise MQClientError(-1, f"the specified group is longer than group max length {GROUP_MAX_LENGTH}.")
    if any(ch not in _VALID_CHARS for ch in group):
        raise MQClientError(
            -1, f"the specified group[{group}] contains illegal characters, allowing only {VALID_PATTERN}"
        )


def check_message(topic: str | None, body: bytes | None, max_message_size: int) -> None:
    """``Validators.checkMessage``: topic, not-allowed topics, then the body (code 13)."""
    check_topic(topic)
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise MQClientError(-1, f"Sending message to topic[{topic}] is forbidden.")
    if body is None:
        raise MQClientError(ResponseCode.MESSAGE_ILLEGAL, "the message body is null")
    if len(body) == 0:
        raise MQClientError(ResponseCode.MESSAGE_ILLEGAL, "the message body length is zero")
    if len(body) > max_message_size:
        raise MQClientError(
            ResponseCode.MESSAGE_ILLEGAL, f"the message body size over max value, MAX: {max_message_size}"
        )
