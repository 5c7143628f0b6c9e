"""What runs inside a node process: ``python -m rmqemu.emulator.node RUN_DIR NODE``.

- :mod:`.main`: reads the node's spec (:class:`emulator.roles.common.node_spec.NodeSpec`), builds transport, role
  and runtime, runs the loop.
- :mod:`.runtime`: the only loop with I/O: feeds messages and ticks to the role, carries out its actions.
- :mod:`.clock`: the node's skewable clock and host time; :mod:`.links`: link rules (delay, loss, cut).
- :mod:`.io`: the node's JSON-lines event log and its store directory.
"""
