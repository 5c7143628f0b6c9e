"""The event kinds of the RocketMQ 5 access layer (a section of the registry, :mod:`rmqemu.event_kinds`
lists it in ``SECTIONS``): what a proxy writes for its gRPC clients, under each client's name
(``client@<pid>``), as a broker writes a real 4.x client's lines.

A gRPC client's send is a ``send`` line with ``mode`` = ``grpc`` and the relaying ``proxy``; a
message it received is in a ``consume`` line with its delivery ``attempts``; the route it was
answered is its ``client.route`` (``source`` = the proxy), and the proxy's own cached view is a
``client.route`` line under the proxy's name (``view`` = ``proxy``). Acks and lease changes are
``proxy.ack``, ``proxy.change_invisible``, ``proxy.nack`` and ``proxy.renew`` (docs/rocketmq-model.md §10.1).
"""

from __future__ import annotations

from rmqemu.event_types import FLOAT, INT, LONG, STR, Field, Kind, ListOf, Section

#: Added to ``send``: a RocketMQ 5 client's send through a proxy.
SEND_FIELDS = (
    Field("proxy", STR, "the proxy that relayed a gRPC client's send (`mode` = `grpc`)", ext=True),
    Field("message_type", STR, "a gRPC client's message type: `NORMAL`, `FIFO`, `DELAY`, `TRANSACTION`", ext=True),
    Field("deliver_ms", FLOAT, "a timed message's delivery instant (epoch ms, `TIMER_DELIVER_MS`)", ext=True),
)

#: Added to ``consume``: messages a gRPC client received through a proxy (a POP).
CONSUME_FIELDS = (
    Field("delivery_attempts", ListOf(INT), "each message's delivery attempt (1 for the first delivery), as `msg_ids`",
          ext=True),
    Field("proxy", STR, "the proxy the gRPC client received through", ext=True),
)

_CALL = (
    Field("group", STR, "the consumer group", required=True), Field("topic", STR, required=True),
    Field("msg_id", STR, "the message id the client names", required=True),
    Field("broker", STR, "the broker the receipt handle names, null when it does not decode", required=True,
          nullable=True),
    Field("proxy", STR, "the proxy that handled it", required=True),
)

PROXY = Section("RocketMQ 5 clients through a proxy", (
    Kind("proxy.ack", "proxy, for a gRPC client", "one entry of an AckMessage answered", _CALL + (
        Field("result", STR, "`ok`, `expired` (the lease ran out: INVALID_RECEIPT_HANDLE, never sent to the "
              "broker), `invalid` (a handle that does not decode), `no_broker` (no master of its broker in the "
              "proxy's route), `timeout`, `code_<n>` (the broker's refusal)", required=True),
    )),
    Kind("proxy.change_invisible", "proxy, for a gRPC client", "a ChangeInvisibleDuration the broker granted: the "
         "message's lease now ends `invisible_ms` from now, under a new receipt handle", _CALL + (
             Field("invisible_ms", LONG, "the new invisible time", required=True),
         )),
    Kind("proxy.nack", "proxy, for a gRPC client", "a message popped for a ReceiveMessage call its client had "
         "left (cancelled, or past its deadline) was given back: its lease changed to 1 s, so it comes back "
         "soon, one attempt later", _CALL + (
             Field("result", STR, "`ok`, `timeout` or `code_<n>` (the broker's refusal: the lease runs its course)",
                   required=True),
         )),
    Kind("proxy.renew", "proxy, for a gRPC client", "the proxy changed the lease of a message an auto-renewed "
         "receive (a PushConsumer's) delivered and the client has not acked yet", _CALL + (
             Field("reason", STR, "`renew` (it was to run out within 10 s: kept for `invisible_ms` more), "
                   "`stop` (renewed for 3 h: back after the group's retry delay), `clear` (the client terminated "
                   "or stopped calling: back in 1 s)", required=True),
             Field("invisible_ms", LONG, "the lease asked for", required=True),
             Field("result", STR, "`ok`, `timeout`, `no_broker` or `code_<n>` (the broker's refusal)", required=True),
         )),
    Kind("proxy.dlq", "proxy, for a gRPC client", "a popped message past the consumer's max attempts was sent to "
         "the group's DLQ (CONSUMER_SEND_MSG_BACK, maxReconsumeTimes 0) and acked, never delivered", _CALL + (
             Field("attempt", INT, "the delivery attempt it would have been", required=True),
             Field("result", STR, "`ok`, `timeout` or `code_<n>` (not sent back: its lease runs out)",
                   required=True),
         )),
    Kind("proxy.tx_check", "proxy, for a gRPC client", "a broker's CHECK_TRANSACTION_STATE relayed to a producer "
         "of the topic as a RecoverOrphanedTransactionCommand on its Telemetry stream", (
             Field("topic", STR, required=True), Field("msg_id", STR, "the half's UNIQ_KEY", required=True),
             Field("broker", STR, "the broker that asked", required=True),
             Field("client_id", STR, "the client asked", required=True),
             Field("proxy", STR, "the proxy that relayed it", required=True),
         )),
))
