"""JAX's NumPy and SciPy functions computed by the functions they document they implement, for a
program whose own check compares the two.

`jnp.modf` is "JAX implementation of `numpy.modf`"; a program that computes `jnp.modf(x)` and asserts
it equals `np.modf(x)` fails where JAX's function is wrong (`jnp.modf(inf)` has a NaN fractional part,
NumPy's is 0.0). With every `jax.numpy` (`linalg`, `fft`) and `jax.scipy` (`special`, `linalg`,
`stats` and its distributions) function called on concrete values computed by its namesake in NumPy
or SciPy, on the same values in the dtype JAX would compute in, such a program runs through: the bug
is JAX's. Every candidate must then run through with it too (`reducer.counterfactual`, the fix
`numpy`), so that the search cannot keep the message and move the check: a comparison of NumPy with
itself, with another input, or with a constant fails with the twins as much as without them.

A call inside a compiled function (`jit`, a `scan`'s body) stays compiled: the namesake is called
back from it (`jax.pure_callback`) on the values it gets, so that a training loop runs at its compiled
speed (an unseen Flax program's 400 steps took 52 s op by op, 6 s compiled), and XLA's own rewrites of
the rest of the program stay in place. Derivatives are JAX's function's (the namesake has none):
a call on values being differentiated (under `grad`, `jvp`) gets the namesake's value and JAX's
function's derivative; one on values batched (`vmap`) keeps JAX's function.
A compiled call of JAX's function that XLA alone gets wrong would run through with the twins as well,
so a candidate is also held not to run through with `jit` op by op alone
(`reducer.counterfactual.EACH_CANDIDATE`). The namesake's result is given in the dtype JAX's function
gives (NumPy sums int8 in int64, and that is no fix of JAX's); a result of another structure than
JAX's, or a namesake that refuses the call's shapes, is not taken. Functions that make or convert arrays rather than
compute (`array`, `zeros`, `arange`, dtypes) are left alone, and so is a call the namesake refuses
(an argument only JAX takes).
"""
from __future__ import annotations

import ast
import functools
import importlib

#: the name of the fix the twins are (`reducer.counterfactual`), which a reduction records
FIX = "numpy"
#: the statement, run before a program's first, that puts the twins in place in its process
LINE = "from reducer.faults.numpy_twins import install as _reducer_numpy_twins; _reducer_numpy_twins()"
#: SciPy's distributions JAX implements (`jax.scipy.stats.norm.isf` is `scipy.stats.norm.isf`)
DISTRIBUTIONS = ("bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "expon", "gamma", "gennorm", "geom",
                 "gumbel_l", "gumbel_r", "laplace", "logistic", "nbinom", "norm", "pareto", "poisson", "t",
                 "truncnorm", "uniform", "vonmises", "wrapcauchy")
#: JAX's namespaces and the ones they document they implement
NAMESPACES = (("jax.numpy", "numpy"), ("jax.numpy.linalg", "numpy.linalg"), ("jax.numpy.fft", "numpy.fft"),
              ("jax.scipy.special", "scipy.special"), ("jax.scipy.linalg", "scipy.linalg"),
              ("jax.scipy.stats", "scipy.stats"),
              *((f"jax.scipy.stats.{name}", f"scipy.stats.{name}") for name in DISTRIBUTIONS))
#: functions that make, convert or describe arrays: nothing of JAX's to check against NumPy
NOT_COMPUTED = frozenset((
    "array", "asarray", "asanyarray", "ascontiguousarray", "astype", "copy", "frombuffer", "fromfunction",
    "fromiter", "fromstring", "zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like", "full",
    "full_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "meshgrid",
    "indices", "dtype", "finfo", "iinfo", "result_type", "promote_types", "can_cast", "issubdtype", "isdtype",
    "isscalar", "ndim", "shape", "size", "save", "load", "printoptions", "set_printoptions",
    "get_printoptions"))


def line(names: tuple[str, ...] = ()) -> str:
    """The statement that puts the twins of the functions `names` only (all, without names) in place."""
    return LINE if not names else LINE.replace("_reducer_numpy_twins()", f"_reducer_numpy_twins({tuple(names)!r})")


def named_in(program: str) -> list[str]:
    """The names in `program` that may be JAX functions with a twin: every attribute, name and import
    it reads, once each, in the order they appear (a name of another kind has no twin, and fixes
    nothing)."""
    found = []
    for node in ast.walk(ast.parse(program)):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else \
            node.name.rsplit(".", 1)[-1] if isinstance(node, ast.alias) else None
        if name and not name.startswith("_") and name not in NOT_COMPUTED:
            found.append((getattr(node, "end_lineno", 0), getattr(node, "end_col_offset", 0), name))
    return list(dict.fromkeys(name for *_, name in sorted(found)))


def namesakes(name: str, program: str = "") -> tuple[str, str] | None:
    """JAX's function of this name and the one it documents it implements, qualified
    (`("jax.numpy.modf", "numpy.modf")`), of the namespace `program` names where several have it
    (`norm.isf`); None where no namespace has both."""
    found = [(f"{ours_name}.{name}", f"{theirs_name}.{name}") for ours_name, ours, theirs_name, theirs in _namespaces()
             if _twins(getattr(ours, name, None), getattr(theirs, name, None))]
    named = set(named_in(program)) if program and len(found) > 1 else set()
    return next((pair for pair in found if pair[0].rsplit(".", 2)[-2] in named), found[0] if found else None)


def _namespaces():
    """(name, module) of each of JAX's namespaces and of the one it implements, where both import."""
    for ours_name, theirs_name in NAMESPACES:
        try:
            yield ours_name, importlib.import_module(ours_name), theirs_name, _resolve(theirs_name)
        except (ImportError, AttributeError):
            continue


def _resolve(path: str):
    """A module, or an object a module holds (`scipy.stats.norm`, a distribution)."""
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, name = path.rpartition(".")
        return getattr(importlib.import_module(parent), name)


def _twins(mine, twin) -> bool:
    return mine is not None and twin is not None and not isinstance(mine, type) and not isinstance(twin, type) \
        and callable(mine) and callable(twin)


def install(names: tuple[str, ...] = ()) -> None:
    """Put each twin in place of JAX's function (only those of `names`, where given)."""
    for _, ours, _, theirs in _namespaces():
        for name in names or dir(ours):
            mine, twin = getattr(ours, name, None), getattr(theirs, name, None)
            if not name.startswith("_") and name not in NOT_COMPUTED and _twins(mine, twin):
                setattr(ours, name, Twin(mine, twin))


class Twin:
    """JAX's function, computed by its NumPy or SciPy namesake where every value it is given is
    concrete; its other attributes (a ufunc's `reduce`) are JAX's."""

    def __init__(self, mine, twin):
        self._mine, self._twin = mine, twin
        functools.update_wrapper(self, mine)

    def __getattr__(self, name):
        return getattr(self._mine, name)

    def __call__(self, *args, **kwargs):
        import jax
        import jax.numpy as jnp
        import numpy as np

        leaves = jax.tree_util.tree_leaves((args, kwargs))
        traced = [leaf for leaf in leaves if isinstance(leaf, jax.core.Tracer)]
        if traced:
            out = self._mine(*args, **kwargs)
            compiled = compiled_twin(self._mine, self._twin, args, kwargs, out) \
                if all(isinstance(leaf, _staged_or_differentiated()) for leaf in traced) else None
            return out if compiled is None else compiled

        def concrete(value):  # the values JAX would compute on, in its dtype
            if isinstance(value, (jax.Array, np.ndarray, np.generic, float, complex)) and not isinstance(value, bool):
                return np.asarray(jnp.asarray(value))
            return value
        try:
            out = self._twin(*jax.tree_util.tree_map(concrete, args), **jax.tree_util.tree_map(concrete, kwargs))
            shapes = jax.eval_shape(self._mine, *args, **kwargs)
            # in the dtype JAX's function gives: NumPy's promotion (an int8 sum in int64) is no fix of JAX's
            return jax.tree_util.tree_map(lambda o, s: jnp.asarray(np.asarray(o).astype(s.dtype)), out, shapes)
        except Exception:
            return self._mine(*args, **kwargs)


def _staged_or_differentiated() -> tuple[type, ...]:
    """The tracers a called-back twin takes: a compiled function's, and a derivative's (not `vmap`'s)."""
    from jax._src.interpreters.ad import JVPTracer, LinearizeTracer
    from jax._src.interpreters.partial_eval import DynamicJaxprTracer

    return DynamicJaxprTracer, JVPTracer, LinearizeTracer


def compiled_twin(mine, twin, args, kwargs, out):
    """`twin` called back from a compiled function on the values its arrays get (`jax.pure_callback`),
    its result in the dtypes `mine` gives (`out`, what `mine` traced), its derivative `mine`'s; None
    where `mine` gives something other than traced arrays (`jnp.isrealobj`'s Python bool, which the
    program's Python reads), or `twin` does not take the call (tried once on zeros of the same shapes,
    when it is traced)."""
    import jax
    import numpy as np

    traced = jax.tree_util.tree_leaves(out)
    if not traced or not all(isinstance(leaf, jax.core.Tracer) for leaf in traced):
        return None

    flat, tree = jax.tree_util.tree_flatten((args, kwargs))
    dynamic = [k for k, leaf in enumerate(flat) if isinstance(leaf, jax.Array)]

    def called(function, values):  # the call, its arrays `values`, its other arguments as they were
        filled = list(flat)
        for k, value in zip(dynamic, values):
            filled[k] = value
        a, kw = jax.tree_util.tree_unflatten(tree, filled)
        return function(*a, **kw)

    shapes = jax.tree_util.tree_map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype), out)
    wanted, structure = jax.tree_util.tree_flatten(shapes)

    def on_host(*values):  # a namedtuple of NumPy's (`EighResult`) for JAX's of the same name: leaf by leaf
        with np.errstate(all="ignore"):
            got = jax.tree_util.tree_leaves(called(twin, [np.asarray(v) for v in values]))
        if len(got) != len(wanted):
            raise TypeError(f"{len(got)} results, not {len(wanted)}")
        return jax.tree_util.tree_unflatten(
            structure, [np.asarray(o).astype(s.dtype).reshape(s.shape) for o, s in zip(got, wanted)])

    try:
        on_host(*(np.zeros(flat[k].shape, flat[k].dtype) for k in dynamic))
    except Exception:
        return None

    @jax.custom_jvp
    def called_back(*values):
        return jax.pure_callback(on_host, shapes, *values, vmap_method="sequential")

    @called_back.defjvp
    def derivative(values, tangents):
        return called_back(*values), jax.jvp(lambda *v: called(mine, v), values, tangents)[1]

    return called_back(*(flat[k] for k in dynamic))
