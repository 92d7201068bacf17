"""Which of the installed jax's primitives the traced level can hold: `python -m reducer.levels.jaxpr.probe`.

Programs are generated, not listed: every public function of JAX's numerical namespaces is called
on arguments chosen from its parameters' names (a key for `key`, a shape for `shape`, a function
for `fun` …, else a small float array), and traced as it is, under `grad` and under `vmap`. Each
registered primitive (`reducer.levels.jaxpr.primitives.registry`) met in those jaxprs gets the smallest
program that binds it; that program is encoded as a spec, decoded, run, and compared with JAX's
own evaluation of the jaxpr. The report says per primitive: round-trips, cannot be encoded (why),
runs differently (why), or no public function binds it (internal to a transformation, a device
mesh or a reference type).
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field

NAMESPACES = ("jax.numpy", "jax.lax", "jax.lax.linalg", "jax.numpy.linalg", "jax.numpy.fft", "jax.nn",
              "jax.scipy.special", "jax.scipy.linalg", "jax.scipy.signal", "jax.random", "jax.image",
              "jax.scipy.sparse.linalg", "jax.scipy.stats.norm")


@dataclass
class Program:
    """A generated program: which public function, how it was transformed, its jaxpr and arguments."""

    name: str
    closed: object
    args: list
    size: int


@dataclass
class Coverage:
    found: dict = field(default_factory=dict)      # primitive -> Program
    verdicts: dict = field(default_factory=dict)   # primitive -> "ok" or why not
    registered: list = field(default_factory=list)

    def unreached(self) -> list:
        return [p for p in self.registered if p not in self.found]

    def summary(self) -> str:
        ok = [p for p, v in self.verdicts.items() if v == "ok"]
        lines = [f"{len(self.registered)} primitives registered; {len(self.found)} bound by a generated program; "
                 f"{len(ok)} round-trip (encode, decode, run, same values)"]
        lines += [f"  {p}: {v}  [{self.found[p].name}]" for p, v in sorted(self.verdicts.items()) if v != "ok"]
        lines.append(f"no public function binds: {', '.join(self.unreached())}")
        return "\n".join(lines)


# -- arguments by parameter name ------------------------------------------------------------------
def _argument(name: str, integer: bool):
    import jax
    import jax.numpy as jnp

    matrix = jnp.asarray([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 4.0]], jnp.float32)
    if integer:
        matrix = jnp.asarray([[2, 5, 1], [5, 3, 2], [1, 2, 4]], jnp.int32)
    table = {
        "key": jax.random.key(0), "shape": (3,), "dtype": jnp.float32, "axis": 0, "dimension": 0, "k": 2, "n": 2,
        "num": 2, "indices_or_sections": 3, "new_sizes": (3, 1), "newshape": (9,), "new_shape": (9,), "sizes": (3,),
        "reps": 2, "repeats": 2, "decimals": 1, "exponent_bits": 5, "mantissa_bits": 10, "new_dtype": jnp.int32,
        "fun": jnp.sin, "f": jnp.sin, "func": jnp.sin, "computation": jax.lax.add, "body_fun": lambda i, c: c * 2,
        "cond_fun": lambda c: jnp.sum(c) < 100, "lower": 0, "upper": 3, "start_indices": (0, 0),
        "slice_sizes": (2, 2), "limit_indices": (2, 2), "start_index": 0, "slice_size": 2, "update": matrix[:2],
        "init_value": 0 if integer else 0.0, "init_values": matrix[0, 0] * 0, "window_dimensions": (2, 2),
        "window_strides": (1, 1), "padding": "VALID", "permutation": (1, 0), "dimensions": (0,),
        "broadcast_dimensions": (0, 1), "out_shape": (3, 3), "padding_config": ((1, 0, 0), (0, 1, 0)),
        "padding_value": matrix[0, 0] * 0, "iota_dimension": 0, "xs": matrix, "init": matrix[0],
        "fill_value": 1.0, "N": 3, "M": 3, "x0": matrix[0], "b": matrix[0], "index": 1, "indices": jnp.asarray([0, 2]),
        "kind": "linear", "method": "linear", "mode": "same", "size": 2, "q": 0.5, "order": 1, "bits": 8,
        "data": 1, "seed": 0, "axis_name": "i", "algorithm": jax.lax.RandomAlgorithm.RNG_DEFAULT,
    }
    return table.get(name, matrix)


def _arguments(fun, integer: bool):
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return None
    required = [p for p in sig.parameters.values()
                if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) > 5:
        return None
    return [_argument(p.name, integer) for p in required]


# -- generating and classifying -------------------------------------------------------------------
def _public(namespace: str):
    import importlib

    try:
        mod = importlib.import_module(namespace)
    except ImportError:
        return
    for attr in sorted(dir(mod)):
        fun = getattr(mod, attr)
        if not attr.startswith("_") and callable(fun) and not inspect.isclass(fun):
            yield f"{namespace}.{attr}", fun


def _primitives(jaxpr) -> set:
    from jax._src import core

    names = {eqn.primitive.name for eqn in jaxpr.eqns}
    for sub in core.subjaxprs(jaxpr):
        names |= _primitives(sub)
    return names


def _count(closed) -> int:
    return len(closed.jaxpr.eqns)


def _is_array(a) -> bool:
    import jax

    return isinstance(a, jax.Array)


def _variants(fun, args):
    """The function of its array arguments (the others stay fixed) as it is, differentiated (sum
    of its float outputs) and batched (two lanes of its first float array)."""
    import jax
    import jax.numpy as jnp

    where = [i for i, a in enumerate(args) if _is_array(a)]
    arrays = [args[i] for i in where]

    def plain(*xs):
        full = list(args)
        for i, x in zip(where, xs):
            full[i] = x
        return fun(*full)

    def total(*xs):
        leaves = [jnp.sum(jnp.real(o)) for o in jax.tree_util.tree_leaves(plain(*xs))
                  if jnp.issubdtype(o.dtype, jnp.inexact)]
        return sum(leaves) if leaves else jnp.zeros(())

    # a collective over a named axis: mapped over two lanes of that name
    if any(isinstance(a, str) and a == "i" for a in args):
        yield "vmap(axis_name) ", jax.vmap(plain, axis_name="i"), [jnp.stack([a, a]) for a in arrays]
        return
    yield "", plain, arrays
    floats = tuple(k for k, a in enumerate(arrays) if jnp.issubdtype(a.dtype, jnp.floating))
    if floats:
        yield "grad ", jax.grad(total, argnums=floats), arrays
        lane = next((k for k in floats if arrays[k].ndim >= 1), None)
        if lane is not None:
            batched = list(arrays)
            batched[lane] = jnp.stack([arrays[lane], arrays[lane] * 0.5])
            yield "vmap ", jax.vmap(plain, in_axes=tuple(0 if k == lane else None for k in range(len(arrays)))), batched


def _indexed_updates():
    """`x.at[i].add(…)` and its siblings: every public method of the `.at` helper."""
    import jax.numpy as jnp

    ref = jnp.zeros(3).at[0]
    for method in sorted(m for m in dir(ref) if not m.startswith("_")):
        def update(x, indices, *, method=method):
            op = getattr(x.at[indices], method)
            return op() if method == "get" else op(x[indices] * 0.5)

        yield f"jax.numpy.ndarray.at[].{method}", update


def _functions():
    """Each public function once (jax.numpy and jax.lax share some), then the `.at` updates."""
    seen = set()
    for namespace in NAMESPACES:
        for name, fun in _public(namespace):
            if id(fun) not in seen:
                seen.add(id(fun))
                yield name, fun
    yield from _indexed_updates()


def generate(coverage: Coverage) -> None:
    import jax

    for fname, fun in _functions():
        for integer in (False, True):
            args = _arguments(fun, integer)
            if args is None:
                break
            traced = False
            for how, variant, xs in _variants(fun, args):
                try:
                    closed = jax.make_jaxpr(variant)(*xs)
                except Exception:  # a generated call that JAX rejects: not a program
                    continue
                traced = True
                for prim in _primitives(closed.jaxpr) & set(coverage.registered):
                    best = coverage.found.get(prim)
                    if best is None or _count(closed) < best.size:
                        coverage.found[prim] = Program(f"{how}{fname}", closed, list(xs), _count(closed))
            if traced:
                break


def round_trip(program: Program) -> str:
    """"ok", or why the program's spec does not come back as the same computation."""
    import jax
    import numpy as np

    from reducer.levels.jaxpr import program as jp
    from reducer.levels.jaxpr.capture import _dtype_name, _values
    from reducer.levels.jaxpr.codec import Encoder, Unencodable
    from reducer.levels.jaxpr.model import Arg, Spec

    flat = jax.tree_util.tree_leaves(program.args)
    try:
        body = Encoder().closed_jaxpr(program.closed)
    except Unencodable as exc:
        return f"cannot be encoded: {exc}"
    except Exception as exc:  # noqa: BLE001 - a bug of the encoder, named in the verdict
        return f"encoding raises {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    spec = Spec([], body, [Arg(tuple(np.shape(a)), _dtype_name(a), _values(a)) for a in flat]).to_json()
    try:
        want = jax.core.eval_jaxpr(program.closed.jaxpr, program.closed.consts, *flat)
    except Exception as exc:  # noqa: BLE001 - not the codec's doing
        return f"the generated program itself raises {type(exc).__name__}"
    try:
        got = jax.tree_util.tree_leaves(jp.run(spec))
    except Exception as exc:  # noqa: BLE001 - the verdict names it
        return f"the decoded spec raises {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return "ok" if _same(got, want) else "the decoded spec computes other values"


def _same(got, want) -> bool:
    import jax
    import numpy as np

    if len(got) != len(want):
        return False
    for a, b in zip(got, want):
        if jax.dtypes.issubdtype(b.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        if np.shape(a) != np.shape(b) or not np.allclose(np.asarray(a), np.asarray(b), equal_nan=True):
            return False
    return True


def measure() -> Coverage:
    from reducer.levels.jaxpr.primitives import registry

    coverage = Coverage(registered=sorted(registry()))
    generate(coverage)
    for prim, program in sorted(coverage.found.items()):
        coverage.verdicts[prim] = round_trip(program)
    return coverage


if __name__ == "__main__":
    print(measure().summary())
    sys.exit(0)
