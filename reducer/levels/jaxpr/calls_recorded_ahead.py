"""Write-ahead records of transformed calls, for failures that leave no exception behind.

A process that dies by a signal (or hangs until it is killed) raises nothing for the capture
(`reducer.levels.jaxpr.capture`) to catch. With `REDUCER_CAPTURE_AHEAD` set, the capture therefore
encodes each transformed call before it compiles and runs (once per function and chain of
transformations; calls made while an outer one is traced too, under `jit` when the outer one
stages them) and rewrites its report file with them at once, so that a process that dies leaves
the call it died in behind. The report's `ahead` list puts the last outermost call first (itself,
then the calls made while it was traced), then the earlier ones, most recent first. Programs whose
failure is a numeric comparison (a wrong gradient, a wrong result) raise nothing inside JAX either:
their calls come back the same way.

For those, with `REDUCER_CAPTURE_VALUES` set too, the report's specs carry the values of each call's
inputs at its latest call (a loop's failing step is seldom its first; but not a call whose inputs a
NaN step before it made non-finite, where that step's finite inputs were recorded): kept at each call when known,
and for a call made while an outer one is traced (its arguments are tracers) recorded by a
`jax.debug.callback` it leaves in the outer program, which runs with it (the first batch element
under `vmap`), so that the call replays on the values it got. Those include the values of the outer
trace the call closes over (a loss that reads the batch of the `jit` step it is differentiated in),
which its spec takes as inputs of their own: replayed as ones, they would lose a failure that
hangs on the values (a zero variance, a cosine of exactly 1).
"""
from __future__ import annotations

import json
import os

import numpy as np

ENV = "REDUCER_CAPTURE_AHEAD"
VALUES_ENV = "REDUCER_CAPTURE_VALUES"
MAX_GROUPS = 8  # the outermost calls kept (with the calls made while they were traced), latest first
MAX_VALUES_AHEAD = 1 << 17
#: the outermost calls, most recent last: key -> the keys of the calls made while it was traced
_GROUPS: dict = {}
_SPECS: dict = {}  # key -> (the transformed function, kept alive so that its id stays its own; spec or None)
_STATE: dict = {"out": None, "last": None, "current": None, "encode": None, "report": ([], []), "inputs": None,
          "calls": 0}
_VALUES: dict = {}  # key -> (the outermost call it was seen in, the values of its inputs then)
_WATCHED: set = set()  # the keys whose values the outer program's callbacks record


def values_limit(default: int) -> int:
    """How many elements an argument may have for its values to be recorded: more when recording
    ahead, since a wrong result or a crash can hang on the values themselves."""
    return max(default, MAX_VALUES_AHEAD) if _STATE["out"] is not None else default


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def start(out: str, encode, specs: list, notes: list, inputs=None) -> None:
    """Record ahead into the report file `out` from now on, encoding calls with `encode` (the
    capture's own: it runs as `__main__`) next to the capture's `specs` and `notes`; `inputs` gives
    a call's input leaves in its spec's order, for recording their values (`VALUES_ENV`)."""
    _STATE.update(out=out, encode=encode, report=(specs, notes),
                  inputs=inputs if os.environ.get(VALUES_ENV) else None)


def prefixes(top, active: list) -> list[list]:
    """The chains of transformations to record the call `top` under, given the calls it runs inside:
    `jit` when an outer one stages it; and for an `enzyme_jax_ir` function differentiated as part of
    a larger function (`jax.grad(loss)` where `loss` calls it), also its own derivative, `jit ∘ vjp`
    (or `jvp` in forward mode), which is what a wrong Enzyme-JAX gradient is judged on."""
    from reducer.cross_checks.gradients import FORWARD, TRANSFORMS  # what differentiates, and in forward mode

    if not active or top.kind == "jit":
        return [[]]
    chains = [[("jit", {})] if any(t.kind == "jit" for t in active) else []]
    kinds = {t.kind for t in active}
    if top.kind == "enzyme" and kinds & set(TRANSFORMS):
        chains.append([("jit", {}), ("jvp" if kinds & FORWARD else "vjp", {})])
    return chains


#: libraries whose transformations are recorded at their own level (`libraries.patch_nnx`): the jax
#: transformations they apply inside to functions of their own are not recorded ahead, since tracing
#: those once more consumes the state the library keeps for the real call (NNX's `grad` pops a queue)
LIBRARY_INTERNALS = ("flax.nnx.",)


def library_internal(fun) -> bool:
    """Whether `fun` (or the function a `functools.partial` wraps) is a library's own."""
    while hasattr(fun, "func") and hasattr(fun, "args"):  # functools.partial
        fun = fun.func
    modules = (getattr(fun, "__module__", None) or "", type(fun).__module__)
    return any(f"{m}.".startswith(LIBRARY_INTERNALS) for m in modules)


def before_call(top, args: tuple, kwargs: dict, active: list) -> None:
    """Called by a recording wrapper before the real transformed call: encode it (the first time)
    and write the report when the record changed."""
    if _STATE["out"] is None or library_internal(top.fun):
        return
    outermost = not active
    _STATE["calls"] += outermost
    for prefix in prefixes(top, active):
        _record(top, args, kwargs, prefix, outermost)
        _watch_values(top, args, kwargs, prefix, active)
    order = tuple(specs_order())
    if order != _STATE["last"]:
        _STATE["last"] = order
        write()


def _record(top, args: tuple, kwargs: dict, prefix: list, outermost: bool) -> None:
    key = (id(top), tuple(kind for kind, _ in prefix))
    if key not in _SPECS:
        _SPECS[key] = (top, _encode(prefix, top, args, kwargs))
    if outermost:
        nested = _GROUPS.pop(key, [])
        _GROUPS[key] = nested  # most recent last
        _STATE["current"] = key
        _forget_old()
    elif _STATE["current"] is not None and key in _SPECS and key not in _GROUPS[_STATE["current"]]:
        _GROUPS[_STATE["current"]].append(key)


def _watch_values(top, args: tuple, kwargs: dict, prefix: list, active: list) -> None:
    """Keep the values of the call's inputs, the latest call's (the failure may come from any step of
    a loop): at once when they are known, else through a callback the outer program runs (its first
    batch element under `vmap`; not inside an `enzyme_jax_ir` function, whose pipeline takes none)."""
    key = (id(top), tuple(kind for kind, _ in prefix))
    if _STATE["inputs"] is None or any(t.kind == "enzyme" for t in active):
        return
    import jax

    try:
        leaves = _STATE["inputs"](prefix, top, args, kwargs)
    except Exception:  # an input the capture cannot lay flat: its call is not encoded either
        return
    sizes = [int(np.prod(np.shape(v), dtype=np.int64)) for v in leaves]
    while leaves and sum(sizes) > MAX_VALUES_AHEAD:  # the last first: the values of an outer trace it closes over
        leaves, sizes = leaves[:-1], sizes[:-1]
    if not leaves:
        return
    if not any(isinstance(v, jax.core.Tracer) for v in leaves):
        _keep(key, leaves)
        return
    if key in _WATCHED:
        return
    _WATCHED.add(key)

    def keep(*values, key=key):
        seen = _VALUES.get(key)
        if seen is None or seen[0] < _STATE["calls"]:
            try:
                _keep(key, [np.asarray(v) for v in values])
            except Exception:  # a value NumPy cannot hold (a PRNG key): the call keeps its encoded values
                pass

    jax.debug.callback(keep, *leaves)


def _keep(key, leaves: list) -> None:
    """Record `leaves` as the values of the call `key`, unless the values recorded before were all
    finite and these are not: a step whose update was NaN hands its NaN parameters to the next
    call, and the failing call is the last with finite inputs."""
    seen = _VALUES.get(key)
    finite = _all_finite(leaves)
    if seen is None or finite or not seen[2]:
        _VALUES[key] = (_STATE["calls"], leaves, finite)


def _all_finite(leaves: list) -> bool:
    from reducer.levels.jaxpr.nonfinite_replay import finite  # what a replay counts as finite

    return all(finite(v) for v in leaves)


def _with_values(key, spec: str | None) -> str | None:
    """`spec` with the values its inputs had at the latest call, where they were recorded."""
    seen = _VALUES.get(key)
    if spec is None or not seen:
        return spec
    from reducer.levels.jaxpr import program as jp
    from reducer.levels.jaxpr.params import flat_values

    data = jp.parse(spec)
    for arg, value in zip(data.args, seen[1]):
        if tuple(np.shape(value)) == arg.shape:
            try:
                arg.values = flat_values(value)
            except Exception:  # kept as encoded
                pass
    return data.to_json()


def _encode(prefix: list, top, args: tuple, kwargs: dict) -> str | None:
    try:
        return _STATE["encode"](prefix, top, args, kwargs)
    except Exception:  # a call that cannot be encoded is simply not recorded
        return None


def _forget_old() -> None:
    """Drop the oldest outermost calls past MAX_GROUPS, and the records only they used."""
    while len(_GROUPS) > MAX_GROUPS:
        oldest = next(iter(_GROUPS))
        dropped = [oldest] + _GROUPS.pop(oldest)
        still = {k for outer, nested in _GROUPS.items() for k in [outer] + nested}
        for key in dropped:
            if key not in still:
                _SPECS.pop(key, None)


def specs_order() -> list:
    """The keys of the recorded calls, in the order a reduction should try them."""
    keys = []
    for outer in reversed(list(_GROUPS)):
        for key in [outer] + _GROUPS[outer]:
            if key in _SPECS and _SPECS[key][1] and key not in keys:
                keys.append(key)
    return keys


def specs() -> list[str]:
    """The recorded calls, with the values of their latest calls: for the report the capture writes
    when the program has ended (a record written ahead, while it runs, has the encoded values)."""
    if _WATCHED:
        import jax

        jax.effects_barrier()  # the callbacks of the last run are in
    return [_with_values(key, _SPECS[key][1]) for key in specs_order()]


def write() -> None:
    """Rewrite the report file with the recorded calls (atomically: a death while writing leaves
    the previous record)."""
    out, (captured, notes) = _STATE["out"], _STATE["report"]
    write_report(out, {"specs": captured, "notes": notes, "error": "", "ahead": [_SPECS[k][1] for k in specs_order()]})


def write_report(out: str, report: dict) -> None:
    """Replace the report file `out` by `report` at once: a process that dies while writing it (a
    heap that a crashing computation corrupted can fail at any later step) leaves the one before."""
    from reducer.files import write_atomic

    write_atomic(out, json.dumps(report))
