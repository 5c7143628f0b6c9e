"""RocketMQ 5.x on the broker: timed messages (the timer store) and topic message types
(docs/rocketmq-model.md §10.4, §10.5)."""
