"""The broker's transactional messages (4.9.4 ``broker/.../transaction/``): the bridge to the store,
END_TRANSACTION, the check service (docs/rocketmq-model.md §9)."""
