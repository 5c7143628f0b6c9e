"""RocketMQ's logic as pure state machines, one room per RocketMQ module (namesrv, broker, store,
client, and common for what they share); the map and what each room may import are in
docs/design.md, "Code layout"."""
