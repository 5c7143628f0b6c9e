"""What every role reads, like RocketMQ's ``common`` module: the contract between a role and its
node's runtime (``base``), the node spec, the configuration objects, the topic config and register
body, a body inside a JSON record, and the processor table namesrv and broker dispatch on. Runs in
every node process; imports no other room (tests/layers.py)."""
