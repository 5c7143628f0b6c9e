"""Topic attributes as 5.x's UPDATE_AND_CREATE_TOPIC sets them (``AttributeParser.parseToMap``,
``AttributeUtil.alterCurrentAttributes``, ``TopicAttributes``; docs/rocketmq-model.md §10.5).

The request header's ``attributes`` is ``+key=value,+key2=value2,-key3``. Creating a topic takes
only ``+`` keys; updating one adds, changes (only a changeable attribute) or removes (``-``, an
existing key). Each problem is a RuntimeException in 5.x, which the admin processor answers as
SYSTEM_ERROR with its message: :class:`AttributeProblem` carries that message.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqemu.emulator.roles.common.message_type import TOPIC_MESSAGE_TYPES


class AttributeProblem(ValueError):
    """The message of the RuntimeException 5.x throws."""


@dataclass(frozen=True)
class Attribute:
    name: str
    changeable: bool
    universe: tuple[str, ...] | None  # an enum's values; None: a long in [low, high]
    low: int = 0
    high: int = 0

    def verify(self, value: str) -> None:
        if self.universe is not None:
            if value not in self.universe:
                raise AttributeProblem(f"value is not in set: [{', '.join(self.universe)}]")
            return
        try:
            number = int(value)
        except ValueError as exc:
            raise AttributeProblem(f'For input string: "{value}"') from exc
        if not self.low <= number <= self.high:
            raise AttributeProblem(f"value is not in range({self.low}, {self.high})")


TOPIC_ATTRIBUTES = {a.name: a for a in (
    Attribute("queue.type", False, ("BatchCQ", "SimpleCQ")),
    Attribute("cleanup.policy", False, ("DELETE", "COMPACTION")),
    Attribute("message.type", True, TOPIC_MESSAGE_TYPES),
    Attribute("reserve.time", True, None, -1, 2**63 - 1),
)}


def parse_to_map(text: str | None) -> dict[str, str]:
    """``parseToMap``: ``+k=v`` and ``-k`` items, comma-separated, keys with their sign."""
    out: dict[str, str] = {}
    if not text:
        return out
    for kv in text.split(","):
        if "=" in kv:
            parts = kv.split("=")
            while len(parts) > 1 and parts[-1] == "":  # Java's split drops trailing empty strings
                parts.pop()
            key, value = parts[0], parts[1] if len(parts) > 1 else ""
            if len(parts) < 2:
                raise AttributeProblem("Index 1 out of bounds for length 1")
            if "+" not in key:
                raise AttributeProblem(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if "-" not in key:
                raise AttributeProblem(f"delete attribute format is wrong: {key}")
        if key in out:
            raise AttributeProblem(f"key duplication: {key}")
        out[key] = value
    return out


def alter(create: bool, current: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    """``alterCurrentAttributes`` over :data:`TOPIC_ATTRIBUTES`: the topic's attributes after the change."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    delete: set[str] = set()
    seen: set[str] = set()
    for key, value in new.items():
        real = key[1:]
        if not real or "+" in real or "-" in real:
            raise AttributeProblem("kv string format wrong.")
        if real in seen:
            raise AttributeProblem(f"alter duplication key. key: {real}")
        seen.add(real)
        if create:
            if not key.startswith("+"):
                raise AttributeProblem(f"only add attribute is supported while creating topic. key: {real}")
            init[real] = value
        elif key.startswith("+"):
            add[real] = value
        elif key.startswith("-"):
            if real not in current:
                raise AttributeProblem(f"attempt to delete a nonexistent key: {real}")
            delete.add(real)
        else:
            raise AttributeProblem(f"wrong format key: {real}")
    groups = ((init, True, False), (add, False, False), (dict.fromkeys(delete, ""), False, True))
    for group, is_init, is_delete in groups:
        for key, value in group.items():
            attribute = TOPIC_ATTRIBUTES.get(key)
            if attribute is None:
                raise AttributeProblem(f"unsupported key: {key}")
            if not is_init and not attribute.changeable:
                raise AttributeProblem(f"attempt to update an unchangeable attribute. key: {key}")
            if not is_delete:
                attribute.verify(value)
    final = {**current, **init, **add}
    for key in delete:
        final.pop(key, None)
    return final
