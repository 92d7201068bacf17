"""JAX's public functions found by name and replaced in a candidate's process (`replace`), and whether
the process now runs inside one of them (`scoped`, `inside`): so that a fix can be left out of a call
(`reducer.faults.safe_ops`) and a call computed in float64 (`reducer.faults.call_fix`).

Where the program runs is told by a flag the call sets while it runs, not by the frames on the stack:
`jnp.log` and `jnp.sqrt` are compiled functions whose traces JAX caches, so a trace made inside
`chi2.logpdf` would otherwise be reused by the program's own `jnp.log`, and the other way round. The
flag is one of JAX's configuration states that its caches of compiled functions key on.
"""
from __future__ import annotations

import functools
import importlib

from reducer.faults.numpy_twins import DISTRIBUTIONS

#: where JAX's public functions live, for a function to be found by its name
NAMESPACES = ("jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.nn", "jax.scipy.special", "jax.scipy.linalg",
              "jax.scipy.stats", *(f"jax.scipy.stats.{name}" for name in DISTRIBUTIONS), "jax.lax")


def replace(name: str, wrap):
    """Put `wrap(function)` in place of each of JAX's public functions named `name`, where a program
    finds it (its namespace's attribute, before the program imports it); returns what undoes it."""
    replaced = []
    for path in NAMESPACES:
        try:
            module = importlib.import_module(path)
        except ImportError:
            continue
        function = getattr(module, name, None)
        if callable(function) and not isinstance(function, type):
            setattr(module, name, _Replaced(function, wrap(function)))
            replaced.append((module, function))

    def undo() -> None:
        for module, function in replaced:
            setattr(module, name, function)

    return undo


class _Replaced:
    """A public function replaced: called, what replaces it; its other attributes (a ufunc's `reduce`,
    a compiled function's `lower`) are its own."""

    def __init__(self, function, instead):
        self._function, self._instead = function, instead
        functools.update_wrapper(self, function)

    def __getattr__(self, name):
        return getattr(self._function, name)

    def __call__(self, *args, **kwargs):
        return self._instead(*args, **kwargs)


@functools.cache
def _flag():
    from jax._src import config

    return config.bool_state("reducer_inside_call", False, help="the process runs inside a public call named so",
                             include_in_jit_key=True, include_in_trace_context=True)


def scoped(name: str):
    """Make each of JAX's public functions named `name` set the flag `inside` reads while it runs, but
    where it is given a function (`lax.scan`'s body is the program's own); returns what undoes it."""
    flag = _flag()

    def wrap(function):
        def within(*args, **kwargs):
            if any(callable(a) for a in (*args, *kwargs.values())):  # `lax.scan(step, …)` runs the program's own
                return function(*args, **kwargs)
            with flag(True):
                return function(*args, **kwargs)
        return within

    return replace(name, wrap)


def inside() -> bool:
    """Whether the process runs inside a call `scoped` named (False where none was)."""
    return _flag.cache_info().currsize > 0 and bool(_flag().value)
