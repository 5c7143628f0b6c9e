"""``SubscriptionData`` as a push consumer builds it (docs/rocketmq-model.md §4.1, §4.7).

``subVersion`` is ``System.currentTimeMillis()`` when built (the node's skewable wall clock), so
a clock rolled back makes the broker ignore the new subscription (#6679).
"""

from __future__ import annotations

from typing import Any

SUB_ALL = "*"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def java_string_hash(s: str) -> int:
    """``String.hashCode`` (the ``codeSet`` entries, the ordered-send selector's key), as a signed
    32-bit int: ``31 * h + c`` over the UTF-16 code units with int overflow. A character beyond
    the BMP is its surrogate pair; a lone surrogate (a Java string may hold one) is its own unit."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def build_subscription_data(topic: str, expression: str | None, wall_ms: float) -> dict[str, Any]:
    """``FilterAPI.buildSubscriptionData`` for TAG expressions: ``*`` or ``A || B``."""
    sub_string = (expression or "").strip() or SUB_ALL
    tags: list[str] = []
    if sub_string != SUB_ALL:
        tags = [t.strip() for t in sub_string.split("||") if t.strip()]
    return {
        "topic": topic, "subString": sub_string, "tagsSet": tags,
        "codeSet": [java_string_hash(t) for t in tags], "expressionType": "TAG",
        "subVersion": int(wall_ms), "classFilterMode": False,
    }


def tag_matches(sub: dict[str, Any], message: dict[str, Any]) -> bool:
    """``PullAPIWrapper.processPullResult``'s client-side tag filter."""
    if not sub["tagsSet"] or sub.get("classFilterMode"):
        return True
    return (message.get("properties") or {}).get("TAGS") in sub["tagsSet"]
