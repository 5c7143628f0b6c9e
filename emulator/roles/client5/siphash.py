"""SipHash-2-4 as Guava's ``Hashing.sipHash24()`` computes it (its fixed key 00..0f), which the 5.x
Java producer uses to pick a FIFO message group's queue (``PublishingLoadBalancer.takeMessageQueueByMessageGroup``).
"""

from __future__ import annotations

MASK = 0xFFFFFFFFFFFFFFFF
K0, K1 = 0x0706050403020100, 0x0F0E0D0C0B0A0908  # Guava's default key: bytes 00..0f, little-endian


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(data: bytes, k0: int = K0, k1: int = K1) -> int:
    """The 64-bit SipHash-2-4 of ``data``, unsigned."""
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & MASK
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & MASK
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & MASK
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & MASK
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    full = len(data) - len(data) % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    last = (len(data) & 0xFF) << 56 | int.from_bytes(data[full:], "little")
    v[3] ^= last
    rounds(2)
    v[0] ^= last
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def group_index(message_group: str, size: int) -> int:
    """``LongMath.mod(sipHash24(group UTF-8).asLong(), size)``: the group's queue among ``size``."""
    h = siphash24(message_group.encode("utf-8", "surrogatepass"))
    signed = h - (1 << 64) if h >> 63 else h
    return signed % size
