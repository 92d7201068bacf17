"""reducer: minimal reproducers for failing JAX / Enzyme-JAX programs."""
from reducer import threadsafe_ast

threadsafe_ast.install()

__version__ = "0.1.0"
