"""Primitive parameters as plain JSON data, and back: what a spec equation's `params` hold.

Encoded: numbers, strings, tuples, dtypes (PRNG key types too: `key<fry>`), enums, named tuples
(`GatherDimensionNumbers`, `ScatterDimensionNumbers`, `ConvDimensionNumbers` …), frozen dataclasses,
small arrays, abstract values (`ShapedArray`), primitives (`select_and_scatter_add`'s
`select_prim`), PRNG implementations, and functions importable by name. A jaxpr inside a parameter
(scatter's `update_jaxpr`, `reduce`'s and `reduce_window`'s `jaxpr`, `custom_transpose` …) is
encoded as a nested spec jaxpr in the equation's `subs` and referred to by its index; a Python
function that only restates such a jaxpr (`reduce`'s `computation`) becomes a function that runs
it. Shardings decode as None: candidates run on one device.

The host function of `jax.pure_callback` / `io_callback` is kept by name when an installed library
defines it (`np.sin`, `scipy.special.logsumexp`) and takes the flat arguments; the script's own
function is replaced by a stand-in returning zeros of the declared result shapes (`HostCallback`),
so that the written-back script stands alone. The reducer keeps a captured program only when its own
run fails the same way, so a failure that needed what the script's function computes is never kept.
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
from typing import Callable

import numpy as np

MAX_VALUES = 4096  # arrays up to this many elements keep their values


class Unencodable(Exception):
    """A parameter or equation the spec cannot express."""


def _path(obj) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def resolve(path: str):
    mod, qual = path.split(":")
    obj = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _importable(fn) -> bool:
    """Whether a function can be found again by `module:qualname` (not a lambda or a local)."""
    try:
        return "<" not in fn.__qualname__ and resolve(_path(fn)) is fn
    except (AttributeError, ImportError, ValueError):
        return False


# -- dtypes ---------------------------------------------------------------------------------------
def _prng_impls() -> dict:
    from jax._src.random import prng

    return {impl.tag: impl for impl in prng.prngs.values()}


def key_impl(dtype_name: str):
    """The PRNG implementation of a key dtype name `key<tag>`, or None for other dtypes."""
    if not dtype_name.startswith("key<"):
        return None
    return _prng_impls()[dtype_name[4:-1]]


def dtype_of(name: str):
    import jax.numpy as jnp

    if name == "bfloat16":
        return jnp.dtype("bfloat16")
    impl = key_impl(name)
    if impl is not None:
        from jax._src.random import prng

        return prng.KeyTy(impl)
    return np.dtype(name)


def flat_values(value) -> list:
    """An array's values as a flat JSON list: a complex number as [real, imaginary], a PRNG key
    array as its key data."""
    import jax

    if jax.dtypes.issubdtype(getattr(value, "dtype", None), jax.dtypes.prng_key):
        value = jax.random.key_data(value)
    arr = np.asarray(value)
    if np.iscomplexobj(arr):
        return np.stack([arr.real, arr.imag], axis=-1).reshape(-1, 2).tolist()
    return arr.ravel().tolist()


def array_of(values, shape, dtype_name: str):
    """The NumPy array (key data, for a key dtype) that `flat_values` gave `values` for."""
    impl = key_impl(dtype_name)
    if impl is not None:
        return np.asarray(values, np.uint32).reshape(tuple(shape) + tuple(impl.key_shape))
    dtype = dtype_of(dtype_name)
    if np.issubdtype(dtype, np.complexfloating):
        pairs = np.asarray(values, np.float64).reshape(-1, 2)
        return (pairs[:, 0] + 1j * pairs[:, 1]).astype(dtype).reshape(shape)
    return np.asarray(values, dtype=dtype).reshape(shape)


def _is_dtype(v) -> bool:
    from jax._src import dtypes

    if isinstance(v, type):  # np.float32, or jnp.float32 (a class whose `dtype` is the dtype)
        return issubclass(v, np.generic) or isinstance(getattr(v, "dtype", None), np.dtype)
    return isinstance(v, (np.dtype, dtypes.ExtendedDType))


# -- encoding -------------------------------------------------------------------------------------
def encode_param(v, nest=None):
    """`v` as JSON data; `nest(jaxpr)` files a jaxpr into the equation's `subs` and returns its index
    (without it, a jaxpr is unencodable)."""
    import jax
    from jax._src import core
    from jax._src.random import prng
    from jax.sharding import Sharding

    if isinstance(v, enum.Enum):  # before int: FftType, RoundingMethod … are IntEnums
        return {"enum": _path(type(v)), "name": v.name}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, complex):
        return {"complex": [v.real, v.imag]}
    if isinstance(v, np.generic) and np.iscomplexobj(v):
        return {"arr": flat_values(v), "dtype": str(v.dtype)}
    if _is_dtype(v):
        return {"dtype": str(np.dtype(getattr(v, "dtype", v))) if isinstance(v, type) else str(v)}
    if isinstance(v, prng.PRNGImpl):
        return {"prng": v.name}
    if isinstance(v, core.Primitive):
        return {"prim": v.name}
    if isinstance(v, (core.Jaxpr, core.ClosedJaxpr)) and nest is not None:
        return {"closed" if isinstance(v, core.ClosedJaxpr) else "jaxpr": nest(v)}
    if isinstance(v, core.ShapedArray):
        return {"aval": [list(v.shape), str(v.dtype), bool(v.weak_type)]}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"nt": _path(type(v)), "f": {k: encode_param(getattr(v, k), nest) for k in v._fields}}
    if type(v).__name__ == "_FlatCallback" and type(v).__module__ == "jax._src.callback":
        return {"host": _library_function(v.callback_func, v.in_tree)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = [f.name for f in dataclasses.fields(v) if f.init]
        return {"dc": _path(type(v)), "f": {k: encode_param(getattr(v, k), nest) for k in fields}}
    if isinstance(v, (tuple, list)):
        return {"t": [encode_param(x, nest) for x in v]}
    if isinstance(v, Sharding) or type(v).__name__ in ("UnspecifiedValue", "Mesh", "AbstractMesh"):
        return None  # candidates run on one device: where a value is placed does not matter
    if isinstance(v, (np.ndarray, np.generic, jax.Array)) and not isinstance(v, core.Tracer) and \
            np.size(v) <= MAX_VALUES and isinstance(v.dtype, np.dtype):
        return {"arr": flat_values(v), "shape": list(np.shape(v)), "dtype": str(v.dtype)}
    if (inspect.isfunction(v) or inspect.isbuiltin(v)) and _importable(v):
        return {"fn": _path(v)}
    what = getattr(v, "__qualname__", "") if callable(v) else ""
    raise Unencodable(f"parameter of type {type(v).__name__}" + (f" ({what})" if what else ""))


def _library_function(fun, in_tree) -> str | None:
    """`module:name` of a callback's host function when an installed library defines it (not the
    script or a module beside it) and it is called with flat positional arguments; else None."""
    import sysconfig

    import jax

    module = getattr(fun, "__module__", None) or ("numpy" if isinstance(fun, np.ufunc) else None)
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", "")
    flat = jax.tree_util.tree_structure((tuple(range(in_tree.num_leaves)), {}))
    if not module or "<" in name or in_tree != flat:
        return None
    try:
        found = resolve(f"{module}:{name}")
    except (AttributeError, ImportError, ValueError):
        return None
    origin = getattr(importlib.import_module(module.split(".")[0]), "__file__", None) or ""
    installed = [sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")]
    return f"{module}:{name}" if found is fun and any(origin.startswith(d) for d in installed) else None


class HostCallback:
    """A decoded callback primitive's `callback` parameter: called with flat arrays, returns the flat
    results. It runs the library function named `path`, or (`path` None) stands in for the script's
    own function with zeros of the declared result shapes (`results`, the equation's `result_avals`)."""

    def __init__(self, path: str | None, results=()):
        self.path, self.results = path, tuple(results)
        self.fun = resolve(path) if path else None

    def __call__(self, *flat_args):
        import jax

        if self.fun is None:
            return [np.zeros(r.shape, r.dtype) for r in self.results]
        returned = jax.tree_util.tree_leaves(self.fun(*flat_args))
        return returned if self.results else []  # called for its effect only (`io_callback(f, None, …)`)

    def __eq__(self, other):
        return isinstance(other, HostCallback) and (self.path, self.results) == (other.path, other.results)

    def __hash__(self):
        return hash((self.path, self.results))


# -- decoding -------------------------------------------------------------------------------------
def decode_param(d, subs: Nested | None = None):
    """The value `d` encodes; `subs` are the equation's nested spec jaxprs, for jaxpr parameters."""
    if isinstance(d, dict):
        for key, decode in _DECODERS.items():
            if key in d:
                return decode(d, subs)
        raise ValueError(f"bad parameter encoding {d!r}")
    return d


def decode_params(params: dict, subs: Nested | None = None) -> dict:
    out = {k: decode_param(v, subs) for k, v in params.items()}
    for k, v in out.items():  # a stand-in callback returns the shapes its equation declares
        if isinstance(v, HostCallback):
            out[k] = HostCallback(v.path, out.get("result_avals", ()))
    return out


def _array(d, subs):
    shape = d.get("shape")
    if shape is None:  # written before shapes were recorded: nested lists
        arr = np.asarray(d["arr"], dtype=dtype_of(d["dtype"]))
    else:
        arr = array_of(d["arr"], shape, d["dtype"])
    return arr[()] if arr.ndim == 0 else arr  # a NumPy scalar stays one: parameters are hashed


def _aval(d, subs):
    from jax._src import core

    shape, dtype, weak = d["aval"]
    return core.ShapedArray(tuple(shape), dtype_of(dtype), weak_type=weak)


def _prng(d, subs):
    from jax._src.random import prng

    return prng.prngs[d["prng"]]


def _prim(d, subs):
    from reducer.levels.jaxpr.primitives import registry

    return registry()[d["prim"]][0]


@dataclasses.dataclass(frozen=True)
class Nested:
    """An equation's nested spec jaxprs (`reducer.levels.jaxpr.model.Jaxpr`), with what runs one
    (`interpret(jaxpr, inputs) -> outputs`: `reducer.levels.jaxpr.program.interpret`): what a jaxpr
    parameter decodes from."""

    jaxprs: tuple
    interpret: Callable

    def closed(self, k: int):
        """A JAX ClosedJaxpr computing nested jaxpr `k`, traced from its interpreter."""
        import jax

        sub = self.jaxprs[k]
        avals = [jax.ShapeDtypeStruct(tuple(v.shape), dtype_of(v.dtype)) for v in sub.inputs]
        return jax.make_jaxpr(lambda *xs: tuple(self.interpret(sub, list(xs))))(*avals)

    def runner(self, k: int) -> Callable:
        """A Python function that runs nested jaxpr `k` on its arguments' leaves."""
        sub = self.jaxprs[k]

        def run(*args):
            import jax

            outs = self.interpret(sub, jax.tree_util.tree_leaves(args))
            return outs[0] if len(outs) == 1 else tuple(outs)

        return run


def _jaxpr(d, subs: Nested):
    closed = subs.closed(d["jaxpr"])
    if closed.consts:  # an open Jaxpr parameter cannot carry them
        raise ValueError(f"a Jaxpr parameter whose spec makes {len(closed.consts)} array constants")
    return closed.jaxpr


_DECODERS = {  # "arr" before "dtype": an array's encoding names its dtype too
    "arr": _array,
    "dtype": lambda d, subs: dtype_of(d["dtype"]),
    "complex": lambda d, subs: complex(*d["complex"]),
    "enum": lambda d, subs: getattr(resolve(d["enum"]), d["name"]),
    "prng": _prng,
    "prim": _prim,
    "aval": _aval,
    "nt": lambda d, subs: resolve(d["nt"])(**{k: decode_param(x, subs) for k, x in d["f"].items()}),
    "dc": lambda d, subs: resolve(d["dc"])(**{k: decode_param(x, subs) for k, x in d["f"].items()}),
    "t": lambda d, subs: tuple(decode_param(x, subs) for x in d["t"]),
    "closed": lambda d, subs: subs.closed(d["closed"]),
    "jaxpr": _jaxpr,
    "fn_of": lambda d, subs: subs.runner(d["fn_of"]),
    "fn": lambda d, subs: resolve(d["fn"]),
    "host": lambda d, subs: HostCallback(d["host"]),
}


# -- Enzyme-JAX's wrapper -------------------------------------------------------------------------
def enzyme_options(argv=(), inner_jit=True, pipeline_options=None) -> dict:
    """The options of an `enzyme_jax_ir(…)` call that differ from its defaults, as JSON data:
    `argv`, `inner_jit`, and the pass pipeline (a `JaXPipeline`'s passes, or another pipeline
    class by name)."""
    import inspect

    from enzyme_ad.jax import enzyme_jax_ir, primitives

    options: dict = {}
    if argv:
        options["argv"] = list(argv)
    if not inner_jit:
        options["inner_jit"] = False
    default = inspect.signature(enzyme_jax_ir).parameters["pipeline_options"].default
    if pipeline_options is not None and pipeline_options is not default:
        if type(pipeline_options) is primitives.JaXPipeline:
            if pipeline_options.pass_pipeline() != default.pass_pipeline():
                options["passes"] = pipeline_options.pass_pipeline()
        else:
            options["pipeline"] = type(pipeline_options).__name__
    return options


def enzyme_kwargs(options: dict | None) -> dict:
    """The keyword arguments of `enzyme_jax_ir` that `enzyme_options` recorded."""
    from enzyme_ad.jax import primitives

    options = options or {}
    kwargs: dict = {}
    if options.get("argv"):
        kwargs["argv"] = tuple(options["argv"])
    if "inner_jit" in options:
        kwargs["inner_jit"] = options["inner_jit"]
    if "passes" in options:
        kwargs["pipeline_options"] = primitives.JaXPipeline(options["passes"])
    elif "pipeline" in options:
        kwargs["pipeline_options"] = getattr(primitives, options["pipeline"])()
    return kwargs
