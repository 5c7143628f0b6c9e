"""The broker process: BrokerController's wiring, its request processors, the namesrv
registration, client bookkeeping, delay levels, and HA and slave sync between master and slave
(docs/rocketmq-model.md §2). HA is served as a broker request (README "What is not modelled"),
so it lives here; the records it carries are the store's (``roles.store.replica``)."""
