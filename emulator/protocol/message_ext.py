"""RocketMQ 4.9's binary message formats (``MessageDecoder``), for real clients on the remoting port.

* MessageExt, the body of a PULL_MESSAGE FOUND response: messages back to back, each the layout
  ``MessageDecoder.decode`` reads -- :func:`encode_messages` / :func:`decode_messages`. Only the v1
  format with IPv4 hosts (magic ``MESSAGE_MAGIC_CODE``, 8-byte born/store hosts): the one 4.9
  writes for IPv4 peers, and the only one a 4.9 client or ali-ons reads. So an encoded message
  always has the ``BORNHOST_V6``/``STOREHOSTADDRESS_V6`` sysFlag bits cleared, and a decoded one
  carrying them is :class:`BadFrame`.
* A batch, the body of SEND_BATCH_MESSAGE (320) as the Java client packs it
  (``MessageDecoder.encodeMessages``): :func:`decode_batch` / :func:`encode_batch`.
* Properties as one string (``messageProperties2String`` / ``string2messageProperties``).

Bodies are bytes and pass through untouched (a compressed body, sysFlag bit 0, stays compressed:
the client inflates it). Decoders take bytes from a socket: any truncated or inconsistent input
is :class:`BadFrame`, never another exception. Text is UTF-8 with replacement, as Java's
``new String(bytes, UTF_8)``.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from rmqemu.emulator.protocol.guard import BadFrame

MESSAGE_MAGIC_CODE = -626843481  # MessageDecoder / CommitLog.MESSAGE_MAGIC_CODE (0xDAA320A7), 4.9
NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR = "\u0001", "\u0002"
HOST_V6_FLAGS = 0x10 | 0x20  # MessageSysFlag.BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
MAX_TOPIC_BYTES = 127  # the topic length is one signed byte
MAX_PROPERTIES_BYTES = 32767  # the properties length is a signed short (Short.MAX_VALUE)

# totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp,
# bornHost ip + port, storeTimestamp, storeHost ip + port, reconsumeTimes, preparedTransactionOffset, body length
_FIXED = struct.Struct(">iiiiiqqiq4siq4siiqi")  # 88 bytes: BODY_SIZE_POSITION 84 + the body length
_BATCH_FIXED = struct.Struct(">iiiii")  # totalSize, magic (0), bodyCRC (0), flag, body length
_SHORT = struct.Struct(">h")


def crc32(data: bytes) -> int:
    """``UtilAll.crc32``: java.util.zip.CRC32 (zlib's) masked to a non-negative int (& 0x7FFFFFFF)."""
    return zlib.crc32(data) & 0x7FFFFFFF


def properties_to_string(props: dict[str, str]) -> str:
    """``messageProperties2String``: ``name\\u0001value`` joined by ``\\u0002``; None values skipped."""
    return PROPERTY_SEPARATOR.join(
        f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in props.items() if v is not None
    )


def string_to_properties(s: str) -> dict[str, str]:
    """``string2messageProperties``: an item needs a non-empty name and value (else it is skipped);
    the name ends at its first ``\\u0001``; a later duplicate wins."""
    out: dict[str, str] = {}
    index, n = 0, len(s)
    while index < n:
        end = s.find(PROPERTY_SEPARATOR, index)
        if end < 0:
            end = n
        if end - index >= 3:
            sep = s.find(NAME_VALUE_SEPARATOR, index)
            if index < sep < end - 1:
                out[s[index:sep]] = s[sep + 1 : end]
        index = end + 1
    return out


def host_bytes(addr: str) -> tuple[bytes, int]:
    """``"ip:port"`` as 4 address bytes and a port; what is not a dotted IPv4 address becomes
    127.0.0.1 (as ``message_store.offset_msg_id`` does), an unreadable port 0."""
    host, _, port = addr.rpartition(":")
    parts = host.split(".")
    if len(parts) == 4 and all(p.isdecimal() and int(p) < 256 for p in parts):
        ip = bytes(int(p) for p in parts)
    else:
        ip = b"\x7f\x00\x00\x01"
    return ip, int(port) if port.isdecimal() and int(port) < 65536 else 0


def message_id(ip: bytes, port: int, offset: int) -> str:
    """``MessageDecoder.createMessageId``: store host ip, port (int32), commit-log offset (int64), upper hex."""
    return (ip + port.to_bytes(4, "big") + offset.to_bytes(8, "big", signed=True)).hex().upper()


def _text(data: bytes, what: str, limit: int) -> bytes:
    if len(data) > limit:
        raise ValueError(f"{what} is {len(data)} bytes, over RocketMQ's {limit}")
    return data


def _body(body: bytes | str) -> bytes:
    return body.encode() if isinstance(body, str) else bytes(body)


def _props_bytes(props: dict[str, str] | str | None) -> bytes:
    s = props if isinstance(props, str) else properties_to_string(props or {})
    return _text(s.encode(), "properties", MAX_PROPERTIES_BYTES)


def encode_messages(records: list[dict[str, Any]], store_host: str) -> bytes:
    """Stored records (message_store's dicts) as MessageExt v1, concatenated: a PULL FOUND body.

    ``store_host`` ("ip:port", the broker's) goes into every message unless a record has its own
    ``storeHost`` (a slave serving its master's records). ``commitLogOffset`` is the physical
    offset: with the store host it makes the offsetMsgId the client computes and CONSUMER_SEND_MSG_BACK
    looks up. ``properties`` may be a dict or already a string. Raises ValueError for a record
    RocketMQ could not hold (topic over 127 bytes, properties over 32767, a number out of range).
    """
    out: list[bytes] = []
    for r in records:
        body = _body(r.get("body", b""))
        topic = _text(str(r["topic"]).encode(), "topic", MAX_TOPIC_BYTES)
        props = _props_bytes(r.get("properties"))
        born_ip, born_port = host_bytes(str(r.get("bornHost") or ""))
        store_ip, store_port = host_bytes(str(r.get("storeHost") or store_host))
        total = _FIXED.size + len(body) + 1 + len(topic) + 2 + len(props)
        try:
            fixed = _FIXED.pack(
                total, MESSAGE_MAGIC_CODE, crc32(body), int(r.get("queueId", 0)), int(r.get("flag", 0)),
                int(r.get("queueOffset", 0)), int(r.get("commitLogOffset", 0)),
                int(r.get("sysFlag", 0)) & ~HOST_V6_FLAGS, int(r.get("bornTimestamp", 0)), born_ip, born_port,
                int(r.get("storeTimestamp", 0)), store_ip, store_port, int(r.get("reconsumeTimes", 0)),
                int(r.get("preparedTransactionOffset", 0)), len(body),
            )
        except struct.error as exc:
            raise ValueError(f"record of {r.get('topic')!r} does not fit MessageExt: {exc}") from None
        out += (fixed, body, bytes((len(topic),)), topic, _SHORT.pack(len(props)), props)
    return b"".join(out)


def _host(ip: bytes, port: int, what: str) -> str:
    if not 0 <= port <= 65535:  # InetSocketAddress refuses it: Java's decode returns null
        raise BadFrame(f"MessageExt {what} port {port} is out of range")
    return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"


def _decode_one(data: bytes, pos: int) -> tuple[dict[str, Any], int]:
    if len(data) - pos < _FIXED.size:
        raise BadFrame(f"MessageExt at {pos} is truncated: {len(data) - pos} bytes left, the fixed part is 88")
    (total, magic, body_crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_ip, born_port,
     store_ts, store_ip, store_port, reconsume, prepared, body_len) = _FIXED.unpack_from(data, pos)
    end = pos + total
    if magic != MESSAGE_MAGIC_CODE:
        raise BadFrame(f"MessageExt at {pos}: magic code {magic} is not 4.9's v1 {MESSAGE_MAGIC_CODE}")
    if total < _FIXED.size + 3 or end > len(data):
        raise BadFrame(f"MessageExt at {pos}: totalSize {total} does not fit the {len(data) - pos} bytes left")
    if sys_flag & HOST_V6_FLAGS:
        raise BadFrame(f"MessageExt at {pos}: IPv6 hosts (sysFlag {sys_flag}) are not supported")
    p = pos + _FIXED.size
    if body_len < 0 or p + body_len + 3 > end:
        raise BadFrame(f"MessageExt at {pos}: body length {body_len} does not fit totalSize {total}")
    body = data[p : p + body_len]
    p += body_len
    topic_len = data[p]
    if topic_len > MAX_TOPIC_BYTES or p + 1 + topic_len + 2 > end:
        raise BadFrame(f"MessageExt at {pos}: topic length {topic_len} does not fit totalSize {total}")
    topic = data[p + 1 : p + 1 + topic_len].decode("utf-8", errors="replace")
    p += 1 + topic_len
    (props_len,) = _SHORT.unpack_from(data, p)
    p += 2
    if props_len < 0 or p + props_len != end:
        raise BadFrame(f"MessageExt at {pos}: properties length {props_len} disagrees with totalSize {total}")
    props = string_to_properties(data[p:end].decode("utf-8", errors="replace"))
    born_host, store_host = _host(born_ip, born_port, "bornHost"), _host(store_ip, store_port, "storeHost")
    msg_id = message_id(store_ip, store_port, phys)
    record = {
        "topic": topic, "queueId": queue_id, "queueOffset": queue_offset, "body": body, "properties": props,
        "bornTimestamp": born_ts, "bornHost": born_host, "storeTimestamp": store_ts,
        "storeHost": store_host, "reconsumeTimes": reconsume, "flag": flag,
        "sysFlag": sys_flag, "commitLogOffset": phys, "preparedTransactionOffset": prepared, "bodyCRC": body_crc,
        "storeSize": total, "msgId": msg_id, "offsetMsgId": msg_id,
    }
    return record, end


def decode_messages(data: bytes) -> list[dict[str, Any]]:
    """The inverse of :func:`encode_messages` (a PULL FOUND body); ``msgId`` and ``offsetMsgId``
    are ``createMessageId(storeHost, commitLogOffset)`` as ``MessageDecoder.decode`` sets them (a
    Java client's ``MessageClientExt.getMsgId`` prefers the UNIQ_KEY property). Bodies stay raw."""
    data = bytes(data)
    out: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        record, pos = _decode_one(data, pos)
        out.append(record)
    return out


def decode_batch(body: bytes) -> list[tuple[int, bytes, dict[str, str]]]:
    """SEND_BATCH_MESSAGE's body (``MessageDecoder.encodeMessages``) as (flag, body, properties) per
    message. Magic and bodyCRC are ignored (the client writes 0s); totalSize must match the parts."""
    data = bytes(body)
    out: list[tuple[int, bytes, dict[str, str]]] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < _BATCH_FIXED.size + 2:
            raise BadFrame(f"batch message at {pos} is truncated: {len(data) - pos} bytes left")
        total, _magic, _crc, flag, body_len = _BATCH_FIXED.unpack_from(data, pos)
        p = pos + _BATCH_FIXED.size
        if body_len < 0 or p + body_len + 2 > len(data):
            raise BadFrame(f"batch message at {pos}: body length {body_len} beyond the {len(data) - p} bytes left")
        msg_body = data[p : p + body_len]
        p += body_len
        (props_len,) = _SHORT.unpack_from(data, p)
        p += 2
        if props_len < 0 or p + props_len > len(data):
            raise BadFrame(f"batch message at {pos}: properties length {props_len} beyond the bytes left")
        size = p + props_len - pos
        if total != size:
            raise BadFrame(f"batch message at {pos}: totalSize {total} disagrees with its parts ({size} bytes)")
        props = string_to_properties(data[p : p + props_len].decode("utf-8", errors="replace"))
        out.append((flag, msg_body, props))
        pos = p + props_len
    return out


def _batch_item_size(body_length: int, properties_length: int) -> int:
    """One message's size in a batch (``encodeMessage``'s storeSize): the fixed part, the body,
    the properties' length (a short) and the properties."""
    return _BATCH_FIXED.size + body_length + _SHORT.size + properties_length


def encode_batch(messages: list[tuple[int, bytes | str, dict[str, str]]]) -> bytes:
    """(flag, body, properties) per message, packed as the Java client's ``encodeMessages``."""
    out: list[bytes] = []
    for flag, body, props in messages:
        raw, prop_bytes = _body(body), _props_bytes(props)
        total = _batch_item_size(len(raw), len(prop_bytes))
        out += (_BATCH_FIXED.pack(total, 0, 0, flag, len(raw)), raw, _SHORT.pack(len(prop_bytes)), prop_bytes)
    return b"".join(out)


def batch_length(messages: list[tuple[bytes, dict[str, str]]]) -> int:
    """The byte length of :func:`encode_batch` of these (body, properties), without building it and
    for any properties (none is refused here): what a 4.9.4 broker holds against ``maxMessageSize``
    for a batch sent as JSON by rmqemu's own producers (docs/rocketmq-model.md §2.4). Properties
    count in UTF-8 as Java's ``getBytes`` does: an unpaired surrogate is one ``?``."""
    return sum(_batch_item_size(len(body), len(properties_to_string(props).encode("utf-8", errors="replace")))
               for body, props in messages)
