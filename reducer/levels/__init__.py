"""The levels a failing program is reduced at, each a package with its representation, passes,
worker entry and emitters: `source` (the Python script), `jaxpr` (the traced failing
transformation, written back as a script), `mlir` (an MLIR module and its pass pipeline)."""
