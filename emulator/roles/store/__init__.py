"""The broker's message store: the consume queues and their files, their restore at start, and a
slave's replicated records (docs/rocketmq-model.md §2.8, §4.5). Runs in the broker process but
never imports the broker room, as RocketMQ's store never imports its broker (tests/layers.py)."""
