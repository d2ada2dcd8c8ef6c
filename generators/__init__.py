"""Hypothesis strategies that generate programs for the fuzzer.

This package will hold the public strategies (e.g. ``programs(wrappers=..., max_ops=...)``)
that produce a ``ProgramSpec``: plain, versioned data with no torch import, rendered into a
runnable program elsewhere. Each strategy documents how its examples shrink. Private modules
hold the implementation; this module only re-exports. Lands with the generators issue.
"""
