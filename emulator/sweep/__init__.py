"""Sweeps: many seeds and parameter values of one topology, run and analysed together
(docs/design.md §9): :mod:`.spec` reads a sweep file into its grid, :mod:`.runner` runs it."""
