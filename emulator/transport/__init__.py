"""The transport layer: the only package that imports zmq.

- :mod:`.base`: the :class:`~.base.Transport` interface and the events ``poll`` returns (no zmq).
- :mod:`.zmq_node`: a node's data plane and its end of the control plane.
- :mod:`.control`: the launcher's control socket and the ``rmqemu up`` supervisor RPC.
- :mod:`.oneshot`: a single blocking request (admin commands, topic creation at launch).
- :mod:`.fake`: an in-memory transport for runtime tests (no zmq).
"""
