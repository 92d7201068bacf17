"""Traced-program passes: they shrink a jaxpr spec (`reducer.jaxpr_program`), one pass per file.

Same contract as every pass: `candidates(program)` lazily yields smaller specs, largest cuts
first, and never runs anything.
"""
