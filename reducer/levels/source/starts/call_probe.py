"""The instrument of the call-alone start, run inside the program's own process: what a library call
of the program was given when its result first held the NaN or Inf the program's check met.

The start writes each call of the function the value is made inside (`vonmises.logpdf(mu, kappa)`)
as `_call_probe.seen(SITE, vonmises.logpdf, mu, kappa)`. `seen` makes the call as the program did
and hands its arrays, with its result, to `jax.debug.callback`, which gives their values as the
computation runs them: under `jit` and inside a derivative as much as op by op, and one element at
a time under `vmap`. The first call of a site whose result holds the kind of value `install(kind)`
names prints one line, `REDUCER-CALL {json}`, on stderr: the site, the shape of its result, the
flat index of that element in it and its value, and each argument: an array (dtype, shape, values), or a number.
A call given anything else (a model, a pytree) is not reported.
"""
from __future__ import annotations

import json
import math
import sys

from reducer.levels.source.starts.check_probe import array_facts

MARK = "REDUCER-CALL"
_kind = "nan"
_reported: set[int] = set()


def install(kind: str) -> None:
    """Report the calls whose result holds `kind` ("nan", "inf", "+inf" or "-inf")."""
    global _kind
    _kind = kind


def _first(values: list[float]) -> int | None:
    """The index of the first value of the kind watched for ("nan", "inf", "+inf" or "-inf")."""
    wanted = {"nan": math.isnan, "inf": math.isinf, "+inf": lambda v: v == math.inf,
              "-inf": lambda v: v == -math.inf}[_kind]
    return next((k for k, v in enumerate(values) if wanted(v)), None)


def seen(site: int, function, *args, **kwargs):
    """`function(*args, **kwargs)`, the call of site `site`, watched."""
    out = function(*args, **kwargs)
    if site not in _reported:
        try:
            _watch(site, args, kwargs, out)
        except Exception:  # the instrument must never change how the program fails
            pass
    return out


def _watch(site: int, args: tuple, kwargs: dict, out) -> None:
    import jax
    import numpy as np

    given = [*args, *kwargs.values()]
    arrays = [k for k, a in enumerate(given) if isinstance(a, (jax.Array, np.ndarray, np.generic))]
    numbers = {k: a for k, a in enumerate(given) if k not in arrays}
    if not all(isinstance(a, (int, float, bool)) for a in numbers.values()) or not isinstance(out, jax.Array):
        return
    names = list(kwargs)

    def record(values, result):
        if site in _reported:
            return
        result = array_facts(np.asarray(result))
        at = _first(result["values"]) if result is not None else None
        if at is None:
            return
        _reported.add(site)
        written = {k: array_facts(np.asarray(v)) for k, v in zip(arrays, values)}
        written = {k: a and {**a, "jax": isinstance(given[k], jax.Array)} for k, a in written.items()}
        described = [written.get(k) if k in written else {"number": numbers[k]} for k in range(len(given))]
        print(MARK, json.dumps({"site": site, "shape": result["shape"], "at": at, "keywords": names,
                                "value": repr(result["values"][at]),
                                "arguments": described}), file=sys.stderr, flush=True)

    jax.debug.callback(record, [given[k] for k in arrays], out)
