"""RocketMQ 5's POP consumption on the broker: POP_MESSAGE, ACK_MESSAGE, CHANGE_INVISIBLE_TIME,
the revive service and FIFO groups' order info (docs/rocketmq-model.md §10.2, §10.3)."""
