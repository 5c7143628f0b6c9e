"""Fault injection for rmqemu (docs/design.md §4): kill, stop, pause, partitions, link faults and
clock skew on plain local processes, seeded, recorded in ``faults.jsonl`` and always healed.

Layers, from pure to effectful:

- ``FaultSpec``, one entry of a topology's ``faults:`` list, is part of the topology file format
  (:mod:`emulator.launcher.fault_spec`), as are the node table (:mod:`emulator.launcher.nodes`)
  and the pidfd / create_time safety the launcher uses to signal only its own processes
  (:mod:`emulator.launcher.signals`): the launcher core needs them and may not import this package;
- :mod:`faults.targets`, :mod:`faults.partition` — pure, seeded target and partition maths;
  :mod:`faults.clients` — real clients (``client@<pid>``) as partition / link targets;
  :mod:`faults.roles` — DLedger role terms (``leader:<broker>``), decided when a step fires;
- :mod:`faults.schedule`, :mod:`faults.nemesis` — plans as plain data (``plan.json``);
  :mod:`faults.role_plan` — what a step keeps of a role term or group mode until it fires;
  :mod:`faults.plan_check` — overlaps and names checked before a plan runs;
- :mod:`faults.kinds`, :mod:`faults.injector` — fault objects and the injector that merges them;
  :mod:`faults.binding` (pure), :mod:`faults.firing` — a step bound to the leaders of the moment
  it fires, and started;
- :mod:`faults.interpreter` — runs a plan on an injected clock: ``run_plan_steps`` for ``launch``,
  ``run_plan`` (until the plan's end, then heal everything) for tests and scripts;
- :mod:`faults.ops` — ``ClusterOps``, what the launcher implements;
- :mod:`faults.verbs` — argument helpers for the interactive CLI verbs;
  :mod:`faults.supervisor_verbs` — their server side in an ``rmqemu up`` supervisor (one
  injector per cluster); :mod:`emulator.cli.fault_verbs` — the ``rmqemu kill|stop|pause|resume|partition|
  link|skew|heal|faults`` commands;
- :mod:`faults.launch_glue` — the plan of ``rmqemu launch`` (topology, ``--nemesis``, ``--replay``);
- :mod:`faults.testing` — ``FakeOps`` for tests.

Errors are in the one tree of :mod:`rmqemu.errors` (``FaultError`` and below). Import from the
modules themselves: this package's ``__init__`` imports nothing, so using one module does not load
the rest.
"""
