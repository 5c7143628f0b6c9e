"""What every layer of rmqemu shares and nothing else: the exception tree (:mod:`rmqemu.errors`)
and the event registry (:mod:`rmqemu.events`), the contract between the nodes that write events
and the Spark job that reads them. Imports nothing from ``emulator``, ``faults`` or ``reports``."""
