"""The put hook of 5.x timed messages (``HookUtils.handleScheduleMessage``, ``checkIfTimerMessage``,
``transformTimerMessage``; docs/rocketmq-model.md §10.4).

A message of transaction type 0 or commit that carries ``TIMER_DELIVER_MS`` (an instant),
``TIMER_DELAY_SEC`` or ``TIMER_DELAY_MS`` (from now) is a timed message, unless it is already in the
timer topic or carries ``TIMER_OUT_MS`` (a delivered one). A delay level wins: a message with
``DELAY`` > 0 loses its three timer properties and goes the 4.x way. A timed message whose instant
is still ahead is rounded down to the wheel's precision (an exact multiple one slot earlier), gets
``TIMER_OUT_MS`` (that slot), ``REAL_TOPIC`` and ``REAL_QID``, and is stored in
``rmq_sys_wheel_timer`` queue 0. One whose instant has passed is stored as it is, in its topic.

The send path asks :func:`refusal` first (the put statuses ``WHEEL_TIMER_NOT_ENABLE`` and
``WHEEL_TIMER_MSG_ILLEGAL`` as SendMessageProcessor answers them); :func:`transform` never refuses.
"""

from __future__ import annotations

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.broker_config import MessageStoreConfig
from rmqemu.emulator.roles.common.topic_config import TIMER_TOPIC

TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
TIMER_OUT_MS = "TIMER_OUT_MS"
TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
REAL_TOPIC, REAL_QID = "REAL_TOPIC", "REAL_QID"
ASKED = (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS)
JAVA_LONG_MAX = 2**63 - 1
PRECISIONS = (100, 200, 500, 1000)  # MessageStoreConfig.setTimerPrecisionMs's candidates


def precision_of(store_cfg: MessageStoreConfig) -> int:
    """``setTimerPrecisionMs``: the largest candidate not above the value (100 below the smallest)."""
    value = store_cfg.timerPrecisionMs
    return max([PRECISIONS[0], *(p for p in PRECISIONS if p <= value)])


def java_long(text: str | None) -> int | None:
    """``Long.parseLong``: None where Java throws."""
    if text is None:
        return None
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -(2**63) <= value <= JAVA_LONG_MAX else None


def is_timed(props: dict[str, str], topic: str) -> bool:
    """``checkIfTimerMessage`` once a delay level is ruled out."""
    if topic == TIMER_TOPIC or TIMER_OUT_MS in props:
        return False
    return any(k in props for k in ASKED)


def deliver_ms(props: dict[str, str], wall_ms: float) -> int | None:
    """The instant asked for: ``TIMER_DELAY_SEC`` first, then ``TIMER_DELAY_MS``, else
    ``TIMER_DELIVER_MS``; None where the parse throws (Java long overflow wraps, as here)."""
    now = int(wall_ms)
    if TIMER_DELAY_SEC in props:
        sec = java_long(props[TIMER_DELAY_SEC])
        return None if sec is None else _wrap(now + _wrap(sec * 1000))
    if TIMER_DELAY_MS in props:
        ms = java_long(props[TIMER_DELAY_MS])
        return None if ms is None else _wrap(now + ms)
    return java_long(props.get(TIMER_DELIVER_MS))


def _wrap(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def illegal_remark(store_cfg: MessageStoreConfig) -> str:
    return ("timer message illegal, the delay time should not be bigger than the max delay "
            f"{store_cfg.timerMaxDelaySec * 1000}ms; or if set del msg, the delay time should be bigger than "
            "the current time")


def refusal(topic: str, props: dict[str, str], delay_level: int, timed_type: bool,
            store_cfg: MessageStoreConfig, wall_ms: float) -> tuple[int, str] | None:
    """What the put of a single message answers instead of storing it, or None. ``timed_type``: the
    transaction type allows a timer (type 0 or commit); ``delay_level``: its parsed ``DELAY``."""
    if not timed_type or delay_level > 0 or not is_timed(props, topic):
        return None
    if not store_cfg.timerWheelEnable:
        return R.SYSTEM_ERROR, f"accurate timer message is not enabled, timerWheelEnable is {str(False).lower()}"
    when = deliver_ms(props, wall_ms)
    if when is None:
        return R.MESSAGE_ILLEGAL, illegal_remark(store_cfg)
    if when > int(wall_ms):
        if when - int(wall_ms) > store_cfg.timerMaxDelaySec * 1000:
            return R.MESSAGE_ILLEGAL, illegal_remark(store_cfg)
    elif TIMER_DEL_UNIQKEY in props:
        return R.MESSAGE_ILLEGAL, illegal_remark(store_cfg)
    return None


def slot_of(when: int, precision: int) -> int:
    """The rounding before the wheel: an exact multiple one slot earlier, else down to the slot."""
    return when - precision if when % precision == 0 else when // precision * precision


def transform(topic: str, queue_id: int, props: dict[str, str], delay_level: int, timed_type: bool,
              store_cfg: MessageStoreConfig, wall_ms: float) -> tuple[str, int, dict[str, str]]:
    """The topic, queue and properties the store writes (a refused message is stored unchanged:
    only the send path refuses, through :func:`refusal`)."""
    if not timed_type or topic == TIMER_TOPIC:
        return topic, queue_id, props
    if delay_level > 0:  # DELAY wins: the timer properties are dropped
        return topic, queue_id, {k: v for k, v in props.items() if k not in ASKED}
    if not is_timed(props, topic) or not store_cfg.timerWheelEnable:
        return topic, queue_id, props
    when = deliver_ms(props, wall_ms)
    if when is None or when <= int(wall_ms) or when - int(wall_ms) > store_cfg.timerMaxDelaySec * 1000:
        return topic, queue_id, props
    out = {**props, TIMER_OUT_MS: str(slot_of(when, precision_of(store_cfg))),
           REAL_TOPIC: topic, REAL_QID: str(queue_id)}
    return TIMER_TOPIC, 0, out
