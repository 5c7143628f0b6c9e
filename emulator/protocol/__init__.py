"""RocketMQ remoting commands as the emulator carries them: codes, frames and their encoding.

A :class:`Frame` is RocketMQ's ``RemotingCommand``: a request/response ``code``, an ``opaque``
correlation id, a ``flag`` (request, response or oneway), a ``remark``, header ``fields`` and an
opaque ``body``. On the wire it is two ZeroMQ frames: the JSON header and the raw body. Nothing in
this module imports zmq; the transport does.

Numbers are RocketMQ 4.9's (docs/rocketmq-model.md §5). The package's modules: ``codes`` (the
numbers), ``frame`` (the command and its encoding), ``guard`` (JSON from untrusted bytes); their
names are all importable from ``emulator.protocol``.

Everything decoded here comes from a socket anyone on the host can reach, so :func:`decode` and
:meth:`Frame.json_body` turn *any* input into a :class:`Frame`/value or :class:`BadFrame`, nothing
else: JSON goes through :func:`loads_checked` (size limit before parsing, nesting bounded, numbers
finite and ints 64-bit) and the header's ``code``, ``opaque`` and ``flag`` must be integers.
"""

from __future__ import annotations

from rmqemu.emulator.protocol.codes import (  # noqa: F401 - the package's names
    AUTO_CREATE_TOPIC_KEY,
    FAQ_SUFFIX,
    MASTER_ID,
    ClientErrorCode,
    EmulatorCode,
    Perm,
    RequestCode,
    ResponseCode,
)
from rmqemu.emulator.protocol.frame import (  # noqa: F401
    CURRENT_VERSION,
    GRPC_PREFIX,
    V3_4_9,
    ChannelEvent,
    Flag,
    Frame,
    decode,
    encode,
    encode_body,
    is_grpc,
    is_remoting,
    oneway,
    request,
)
from rmqemu.emulator.protocol.guard import (  # noqa: F401
    MAX_BODY_JSON_BYTES,
    MAX_HEADER_BYTES,
    MAX_JSON_DEPTH,
    BadFrame,
    loads_checked,
)
