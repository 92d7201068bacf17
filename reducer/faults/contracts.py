"""What public JAX calls document they take, checked inside a candidate's own process: an input
outside it is not the program's failure, whatever value comes out.

JAX does not check every documented precondition. `jnp.linalg.cholesky(jnp.ones((1, 2)))` returns a
NaN factor (the input is symmetrised by broadcasting), so a search held only to "a NaN from
`cholesky`" can shrink a rank-deficient Gram matrix to a matrix that is not square, a program a
maintainer would answer with "the input must be square". As C-Reduce runs undefined-behaviour
checkers on every candidate of a wrong-code bug, the runs that hold a candidate to its failing
value's origin (`reducer.faults.origin`) run with `install()` first: a call given an input its
documentation rules out raises `BrokenContract`, and the candidate does not fail as the original did.

The contracts: the calls below take square matrices in their last two axes (`(..., N, N)`), as
their documentation says; the first argument is the matrix (`solve(a, b)`: `a`).
"""
from __future__ import annotations

import functools
import importlib

import numpy as np

BROKEN = "broken"  # the signature's `contract` where the original breaks one


def field(breaks: bool) -> tuple[tuple[str, str], ...]:
    """The signature field that records that the original breaks a public call's contract (then its
    candidates may too, and the contract checks stay off), or none."""
    return (("contract", BROKEN),) if breaks else ()


#: the calls that take square matrices, by module
SQUARE = {"jax.numpy.linalg": ("cholesky", "inv", "det", "slogdet", "eigh", "eigvalsh", "eig", "eigvals",
                               "matrix_power", "solve"),
          "jax.lax.linalg": ("cholesky", "eigh"),
          "jax.scipy.linalg": ("cholesky", "cho_factor", "inv", "det", "eigh", "expm", "schur", "sqrtm",
                               "solve_triangular")}
#: the line, run before the program's first statement, that puts the contracts in place
LINE = "from reducer.faults.contracts import install as _reducer_contracts; _reducer_contracts()"
#: what a broken contract prints, and what a run's output is searched for
NAME = "BrokenContract"


class BrokenContract(ValueError):
    """A public call was given an input its documentation rules out."""


def install() -> None:
    for module_name, names in SQUARE.items():
        module = importlib.import_module(module_name)
        for name in names:
            call = getattr(module, name, None)
            if call is not None and not getattr(call, "_reducer_contract", False):
                setattr(module, name, _square(call, f"{module_name.replace('jax.numpy', 'jnp')}.{name}"))


def broken(output: str) -> str:
    """The broken contract a run's output reports (its message), or ""."""
    for line in reversed(output.splitlines()):
        if line.startswith(f"{__name__}.{NAME}: ") or line.startswith(f"{NAME}: "):
            return line.split(": ", 1)[1]
    return ""


def _square(call, name: str):
    @functools.wraps(call)
    def checked(a, *args, **kwargs):
        shape = tuple(a.shape) if hasattr(a, "shape") else np.shape(a)
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise BrokenContract(f"`{name}` takes square matrices (..., N, N); it was given shape {shape}")
        return call(a, *args, **kwargs)

    checked._reducer_contract = True
    return checked
