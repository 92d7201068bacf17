"""reducer: minimal reproducers for failing JAX / Enzyme-JAX programs."""
__version__ = "0.1.0"
