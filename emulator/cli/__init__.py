"""The ``rmqemu`` command line and its wiring, the top layer: :mod:`.main` (the click group and
error handling), :mod:`.launch` (``launch``: a cluster plus its fault plan), :mod:`.supervisor`
(``up``/``down``/``status``), :mod:`.admin` (``admin``) and :mod:`.fault_verbs` (``kill``,
``partition``, ... against an ``up`` cluster). Only this layer imports from every other one."""
