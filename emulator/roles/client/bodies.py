"""What the bodies of rmqemu's own producers are made of: the ``body:`` workload key
(docs/design.md §5 "Message bodies").

User data is arbitrary, and the paths that carry bodies (the store's queue files, replication,
pulls, batches) must keep every one of them. ``filler`` is readable in a store file; ``text`` and
``bytes`` are hostile on purpose: ``text`` is rich in the characters that end a line for
``str.splitlines`` but are left unescaped by a JSON encoder (U+0085, U+2028, U+2029), the other
line breaks, NUL, quotes, backslashes, astral-plane characters, letters of several scripts and any
other code point; ``bytes`` is never valid UTF-8. Every draw comes from the ``random.Random`` given,
so a seed repeats the bodies.
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Literal, get_args

BodyKind = Literal["filler", "text", "bytes", "mixed"]
KINDS: tuple[str, ...] = get_args(BodyKind)
DRAWN = ("filler", "text", "bytes")  # what ``mixed`` draws from, one per message

# Every boundary of str.splitlines except "\r\n" (two of them in a row make it).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# JSON's escapes, C's string end, RocketMQ's property separators (\x01, \x02), BOM, bidi
# override, zero-width joiner, replacement character, a noncharacter, markup.
AWKWARD = "\x00\"\\'\t\x01\x02\x7f\ufeff\u202e\u200d\ufffd\uffff/<&{"
LETTERS = ("azAZ09 \u00e9\u00df\u03a9\u03bb\u0436\u044f\u05e9\u05d0\u0645\u0639\u0928\u093e"
           "\u4e2d\u6587\ud55c\u30a2\u0e44\u1e9e")  # Latin, Greek, Cyrillic, Hebrew, Arabic, Devanagari, CJK, ...
ASTRAL = "\U0001f600\U0001d11e\U00010348\U0001f9ea\U00020000\U0010fffd"  # emoji, music, Gothic, CJK ext. B, plane 16
ANY = None  # a draw of any code point but a surrogate
# (characters, share of the draws in percent): 40 % are line breaks or awkward
POOLS: tuple[tuple[str, int], ...] = ((LINE_BREAKS, 25), (AWKWARD, 15), (LETTERS, 35), (ASTRAL, 10))
ANY_SHARE = 15
_CHARS: list[str | None] = [ch for chars, _ in POOLS for ch in chars] + [ANY]
_CUM_WEIGHTS = list(itertools.accumulate([share / len(chars) for chars, share in POOLS for _ in chars] + [ANY_SHARE]))
ONE_BYTE = "".join(ch for chars, _ in POOLS for ch in chars if ord(ch) < 0x80)  # what fits the last byte

# UTF-8 pieces spliced into ``bytes`` bodies: line breaks as JSON leaves them, a lone CR, NUL,
# a truncated sequence, an overlong encoding, bytes that never occur in UTF-8.
FRAGMENTS = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\r\n", b"\r", b"\x00", b"\xe2\x80",
             b"\xc0\xaf", b"\xff", b"\xfe")


def body_kind_problem(value: Any) -> str | None:
    """Why ``value`` is no ``body:`` of a producer, or None."""
    if isinstance(value, str) and value in KINDS:
        return None
    return f"expected one of {', '.join(KINDS)}, got {value!r:.80}"


def make_body(kind: str, size: int, msg_id: str, rng: random.Random) -> bytes:
    """A body of ``kind`` and exactly ``size`` bytes (UTF-8 bytes for text) for message ``msg_id``."""
    if kind == "mixed":
        kind = DRAWN[rng.randrange(len(DRAWN))]
    if kind == "text":
        return text_body(size, rng)
    if kind == "bytes":
        return bytes_body(size, rng)
    return ((msg_id + "|").encode() + b"x" * size)[:size]


def _any_char(rng: random.Random) -> str:
    cp = rng.randrange(0x110000 - 0x800)  # every code point but the 2,048 surrogates
    return chr(cp + 0x800 if cp >= 0xD800 else cp)


def text_body(size: int, rng: random.Random) -> bytes:
    """Text of exactly ``size`` UTF-8 bytes. Characters are drawn ``left // 4`` at a time (at most
    4 bytes each: a draw never overshoots) until fewer than 4 bytes are left; those are one-byte
    characters of the same pools (line breaks among them)."""
    parts: list[bytes] = []
    left = size
    while left >= 4:
        drawn = rng.choices(_CHARS, cum_weights=_CUM_WEIGHTS, k=left // 4)
        part = "".join(ch or _any_char(rng) for ch in drawn).encode("utf-8")
        parts.append(part)
        left -= len(part)
    parts.append("".join(rng.choices(ONE_BYTE, k=left)).encode("utf-8"))
    return b"".join(parts)


def bytes_body(size: int, rng: random.Random) -> bytes:
    """``size`` random bytes with a fragment of :data:`FRAGMENTS` spliced in every 32 bytes or so;
    one byte becomes 0xFF if the result would still decode as UTF-8 (a 1-3 byte body may)."""
    if size == 0:
        return b""
    buf = bytearray(rng.randbytes(size))
    for _ in range(size // 32 + 1):
        frag = FRAGMENTS[rng.randrange(len(FRAGMENTS))]
        at = rng.randrange(size)
        buf[at:at + len(frag)] = frag[: size - at]
    try:
        buf.decode("utf-8")
    except UnicodeDecodeError:
        return bytes(buf)
    buf[rng.randrange(size)] = 0xFF
    return bytes(buf)
