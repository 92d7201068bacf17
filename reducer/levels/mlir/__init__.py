"""The IR level: an MLIR module (StableHLO, an Enzyme-JAX dump) and its pass pipeline, parsed and
edited through the MLIR bindings inside jaxlib."""
