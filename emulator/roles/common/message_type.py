"""Topic message types (5.x ``TopicMessageType``, ``DefaultTopicMessageTypeValidator``), in ``common``
as in 5.x so both the broker and the proxy read them (docs/rocketmq-model.md §10.5).

A topic's type is its ``message.type`` attribute (NORMAL without one). 5.x's **broker** checks no
type on send: ``SendMessageProcessor`` reads a message's type only for its metrics. The check is the
proxy's (``ProducerProcessor.sendMessage`` with ``enableTopicMessageTypeCheck``, on by default):
it reads the topic's type from the broker (GET_TOPIC_CONFIG, emulator/roles/broker/timer/topic_config_processor.py) and
calls :func:`check_message_type` with the type of the message, :func:`message_type_of`.
"""

from __future__ import annotations

UNSPECIFIED, NORMAL, FIFO, DELAY, TRANSACTION, MIXED = (
    "UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")
TOPIC_MESSAGE_TYPES = (UNSPECIFIED, NORMAL, FIFO, DELAY, TRANSACTION, MIXED)  # the attribute's universe
SETTABLE = (NORMAL, FIFO, DELAY, TRANSACTION, MIXED)  # what a topology's message_type may say
DELAY_PROPERTIES = ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
SHARDING_KEY = "__SHARDINGKEY"


def message_type_of(props: dict[str, str]) -> str:
    """``parseFromMessageProperty``: TRANSACTION when ``TRAN_MSG`` is exactly ``true``, DELAY with a
    delay level or a timer property, FIFO with a sharding key (the message group), else NORMAL."""
    if props.get("TRAN_MSG") == "true":
        return TRANSACTION
    if any(k in props for k in DELAY_PROPERTIES):
        return DELAY
    if SHARDING_KEY in props:
        return FIFO
    return NORMAL


def check_message_type(topic_type: str, message_type: str) -> str | None:
    """``DefaultTopicMessageTypeValidator.validate(expected=topic_type, actual=message_type)``: None
    when the send may go on, else the error text the proxy answers with (its
    MESSAGE_PROPERTY_CONFLICT_WITH_TYPE). A topic the proxy could not read is UNSPECIFIED, which only
    an UNSPECIFIED message would match, and no message is: every send to it fails."""
    if message_type == UNSPECIFIED or (message_type != topic_type and topic_type != MIXED):
        return (f"TopicMessageType validate failed, the expected type is {topic_type}, "
                f"but actual type is {message_type}")
    return None
