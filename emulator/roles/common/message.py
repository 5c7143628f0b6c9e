"""A message body inside a JSON record or frame field: text as it is, anything else as base64.

The store's queue files, HA transfers and rmqemu's own frames are JSON, while a real client's
body is bytes (a deflated body, say): :func:`body_fields` keeps those bytes exactly and
:func:`body_bytes` gives them back (docs/design.md §6, "JSON-lines files").
"""

from __future__ import annotations

import base64
from typing import Any


def body_fields(body: bytes | str) -> dict[str, str]:
    """How a body is kept in a record (a JSON line): ``body`` when it is text, else ``body64``
    (base64), so a real client's bytes (a deflated body, say) come back unchanged."""
    if isinstance(body, str):
        return {"body": body}
    try:
        return {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body64": base64.b64encode(body).decode("ascii")}


def body_bytes(record: dict[str, Any]) -> bytes:
    """The body of a stored record, as the producer sent it."""
    if "body64" in record:
        return base64.b64decode(record["body64"])
    body = record.get("body", "")
    return body.encode() if isinstance(body, str) else bytes(body)
