"""The client processes, rmqemu's own producers and consumers: the MQClientInstance, route
cache, send flow and fault strategy, rebalance, pull loop, orderly consumption, offsets, and the
seeded workload (docs/rocketmq-model.md §3, §4). Never imports broker, store or namesrv: a client
knows the cluster only through the wire (tests/layers.py)."""
