"""Emulated RocketMQ 5 clients (``rocketmq-clients`` 5.x, the Java client as the reference): a
producer and a SimpleConsumer that call a proxy node over rmqemu's own wire with the proxy's gRPC
frames (docs/design.md §2 "The gRPC port", docs/rocketmq-model.md §10.6)."""
