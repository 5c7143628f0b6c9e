"""JSON from bytes anyone on the host can send: size limit before parsing, nesting bounded.

Everything a node decodes comes from a socket every local user can reach; :func:`loads_checked`
turns any input into a sane JSON value or :class:`BadFrame`, nothing else.
"""

from __future__ import annotations

import re
from typing import Any

from rmqemu import wire_json


class BadFrame(ValueError):
    """A frame that cannot be decoded; the runtime logs it as ``wire.bad_frame`` and drops it."""


MAX_HEADER_BYTES = 256 * 1024  # a header is a code, ids and a flat field map: kilobytes at most
MAX_BODY_JSON_BYTES = 64 * 1024 * 1024  # the transport's socket-level MAXMSGSIZE bounds bodies too
MAX_JSON_DEPTH = 64  # RocketMQ's bodies nest a handful of levels (tables of tables of queue data)
_TO_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def _surely_shallow(data: bytes) -> bool:
    """True when the brackets in ``data`` nest at most :data:`MAX_JSON_DEPTH` deep, by C-speed
    byte operations: keep the brackets only, then strip innermost pairs once per level. Brackets
    inside strings can only make this say False (then the exact walk decides)."""
    parens = data.translate(_TO_PARENS, _NOT_BRACKETS)
    if len(parens) <= 2 * MAX_JSON_DEPTH + 1:  # nesting d takes d openers and d closers
        return True
    for _ in range(MAX_JSON_DEPTH):
        if not parens:
            return True
        parens = parens.replace(b"()", b"")
    return not parens


def _check_depth(value: Any) -> None:
    """Iteratively (a recursive walk could itself overflow)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise BadFrame(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))


# an escape sequence: a surrogate pair, a lone surrogate, or any other (kept, and consumed whole
# so that an escaped backslash before "u" is never taken for the start of an escape)
_LONE_SURROGATE = re.compile(rb"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u(d[89a-f][0-9a-f]{2})|\\.",
                             re.IGNORECASE | re.DOTALL)


def _as_java_encodes(m: re.Match[bytes]) -> bytes:
    """A lone surrogate escape becomes ``?``, what Java's UTF-8 encoder writes for it: a JS
    client writes ``\\ud800`` for a lone surrogate, RocketMQ's fastjson takes it into a Java
    string, and the broker stores that string's UTF-8 bytes. Anything else stays as it is."""
    return b"?" if m.group(3) else m.group(0)


def loads_checked(data: bytes, what: str, max_bytes: int) -> Any:
    """JSON from untrusted bytes: :class:`BadFrame` for anything but a sane JSON value.

    The size is checked before parsing. :mod:`rmqemu.wire_json` (orjson) already refuses what
    used to kill nodes through the standard library (``1e400`` became ``inf`` and ``int(inf)``
    an ``OverflowError``; 100,000 ``[`` a ``RecursionError``): numbers beyond a double's range,
    ``NaN``/``Infinity`` and nesting past 1024 are a ``ValueError``, and ints are 64-bit (wider
    ones parse as finite floats). Nesting is bounded tighter, to :data:`MAX_JSON_DEPTH`, because
    what a role does with a 1,000-deep value (an event line: orjson writes at most 254 levels;
    ``repr``) would raise far from here; the exact walk runs only when a byte scan says the
    input could nest that deep, so an ordinary header costs one ``translate``. Text that is not
    UTF-8 reads as RocketMQ reads it: a malformed byte sequence as U+FFFD, a lone surrogate escape
    (JavaScript writes one for half an emoji) as ``?``, what Java's UTF-8 encoder stores."""
    if len(data) > max_bytes:
        raise BadFrame(f"{what} is {len(data)} bytes, over the {max_bytes}-byte limit")
    try:
        value = wire_json.loads(data)
    except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
        if "surrogate" not in str(exc) and "UTF-8" not in str(exc):
            raise BadFrame(f"{what} is not JSON: {str(exc)[:200]}") from None
        try:  # RocketMQ decodes a header with new String(bytes, UTF_8) before fastjson parses it
            value = wire_json.loads(_LONE_SURROGATE.sub(_as_java_encodes, data.decode("utf-8", "replace").encode()))
        except ValueError as again:
            raise BadFrame(f"{what} is not JSON: {str(again)[:200]}") from None
    if not _surely_shallow(data):
        _check_depth(value)
    return value
