"""What runs in the launcher process, below fault injection: the topology file and its checks
(:mod:`.topology`, :mod:`.topology_load`, :mod:`.fault_spec`), the run's node table
(:mod:`.nodes`), spawning and signalling nodes safely (:mod:`.processes`, :mod:`.signals`), the
run directory and manifest (:mod:`.run_dir`, :mod:`.manifest`), one-shot admin requests
(:mod:`.admin`) and :class:`~.cluster.Cluster`, which ties them together."""
