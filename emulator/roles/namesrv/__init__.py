"""The NameServer process: its request processor, the broker scan and the RouteInfoManager's
tables (docs/rocketmq-model.md §1)."""
