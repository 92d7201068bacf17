"""The traced-program level: the failing transformation's jaxpr is captured, shrunk and written
back as a standalone script of public `jax` calls."""
