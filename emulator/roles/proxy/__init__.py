"""The proxy: RocketMQ 5's gRPC access layer in front of the brokers (docs/rocketmq-model.md §10)."""
