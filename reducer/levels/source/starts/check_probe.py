"""The instrument of the check-alone start, run inside the program's own process: the line of the
program's own code where its failure was raised, and the numeric arrays its frame held then.

`install(kind)`, the program's first statement, traces the calls into the program's own frames
(not a library's: their calls are not traced) for one event, an exception of the failure's type
(`AssertionError`) raised in or passing through one of them. The first frame of the program an
exception reaches is where the program's check failed; one line, `REDUCER-CHECK {json}`, goes to
stderr: that line and, by name, each numeric (floating, integer or boolean) NumPy or JAX array of
that frame (its dtype, shape and values; none of more than MAX_ELEMENTS elements), and the same of
the frame each function of the program that frame's code names (`log_likelihood(model, x, y)`) held
when it last returned. The last such line of a run is the failure's: an exception the program catches
and goes on from is followed by another.
"""
from __future__ import annotations

import json
import sys

MARK = "REDUCER-CHECK"
MAX_ELEMENTS = 4096  # values of one array written out at most
_own = ""
_kind = "AssertionError"
_seen: set[int] = set()
_returned: dict[str, dict] = {}  # a function of the program's name: its frame's locals at its last return


def array_facts(value) -> dict | None:
    """The dtype, shape and values of a numeric NumPy or JAX array (or NumPy scalar: floating, integer
    or boolean), and whether it is JAX's; None for anything else or a larger one."""
    import numpy as np

    jax = sys.modules.get("jax")
    is_jax = jax is not None and isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer)
    if not (is_jax or isinstance(value, (np.ndarray, np.floating, np.integer, np.bool_))):
        return None
    array = np.asarray(value)
    floating = np.issubdtype(array.dtype, np.floating)
    numeric = floating or np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_
    if not numeric or array.size > MAX_ELEMENTS:
        return None
    return {"dtype": str(array.dtype), "shape": list(array.shape), "jax": bool(is_jax),
            "values": (array.astype(np.float64) if floating else array).reshape(-1).tolist()}


def reported(output: str, mark: str) -> list[dict]:
    """What a probe reported on lines that start with `mark`, in the order it did (a line cut short is
    left out)."""
    found = []
    for line in output.splitlines():
        if line.startswith(mark + " "):
            try:
                found.append(json.loads(line[len(mark) + 1:]))
            except ValueError:
                continue
    return found


def _of_kind(exc: BaseException) -> bool:
    return any(t.__name__ == _kind for t in type(exc).__mro__)


def _arrays(names: dict) -> dict:
    arrays = {}
    for name, value in list(names.items()):
        try:
            found = array_facts(value)
        except Exception:  # the instrument must never change how the program fails
            found = None
        if found is not None:
            arrays[name] = found
    return arrays


def report(frame) -> None:
    returned = {name: _arrays(_returned[name]) for name in frame.f_code.co_names if name in _returned}
    print(MARK, json.dumps({"line": frame.f_lineno, "arrays": _arrays(frame.f_locals),
                            "returned": {name: found for name, found in returned.items() if found}}),
          file=sys.stderr, flush=True)


def _local(frame, event, arg):
    if event == "return" and frame.f_back is not None:
        _returned[frame.f_code.co_name] = dict(frame.f_locals)
    elif event == "exception":
        exc = arg[1]
        if id(exc) not in _seen and isinstance(exc, BaseException) and _of_kind(exc):
            _seen.add(id(exc))
            report(frame)
    return _local


def _trace(frame, event, arg):
    if event != "call" or frame.f_code.co_filename != _own:
        return None
    frame.f_trace_lines = False
    return _local


def install(kind: str = "AssertionError") -> None:
    """Start watching the program that calls this as its first statement for an exception `kind`."""
    global _own, _kind
    caller = sys._getframe(1)
    _own, _kind = caller.f_code.co_filename, kind
    sys.settrace(_trace)
    caller.f_trace_lines = False
    caller.f_trace = _local
