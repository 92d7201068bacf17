"""How values are spelled in a written-back script: numbers (`jnp.nan`, `-jnp.inf`), dtypes, arrays
(inline, PRNG keys through `jax.random.wrap_key_data`, complex numbers from their parts) and
primitive parameters (`lax.GatherDimensionNumbers(…)`, enums, PRNG implementations by name), and
callback equations as `jax.pure_callback(…)` / `io_callback(…)` with their host function (a library's,
by name, or a stand-in returning zeros of the declared results), PRNG primitives as their `jax.random`
functions and `platform_index` through `lax.platform_dependent`.

Every spelling is an expression that evaluates, in a script importing `jax`, `jax.numpy as jnp`,
`lax` and `numpy as np`, to the value the spec holds; `Spelling.imports` collects any other import
a parameter needs. Float32, JAX's default floating type, may be spelled so (`default_float`).
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
import math
import re

import numpy as np

from reducer.levels.jaxpr.model import REAL_FLOATING
from reducer.levels.jaxpr.params import HostCallback, key_impl


#: float32 spelled `float`, JAX's default floating type, which is float64 in a program made float64:
#: a written-back script held to the float64 fix of an overflow (`reducer.faults.float64_fix`) keeps
#: its values in the type the program's own values had (`default_float`)
_DEFAULT_FLOAT = contextvars.ContextVar("default_float", default=False)


@contextlib.contextmanager
def default_float(on: bool = True):
    """Within it (when `on`), float32 is spelled as JAX's default floating type (`float`)."""
    token = _DEFAULT_FLOAT.set(on)
    try:
        yield
    finally:
        _DEFAULT_FLOAT.reset(token)


def dtype_expr(name: str) -> str:
    if name == "float32" and _DEFAULT_FLOAT.get():
        return "float"
    return {"bool": "jnp.bool_"}.get(name, f"jnp.{name}")


def number(v) -> str:
    """A Python number as source; NaN and infinities as `jnp.nan`, `jnp.inf`, `-jnp.inf`."""
    if isinstance(v, bool) or not isinstance(v, (float, complex)):
        return repr(v)
    if isinstance(v, complex):
        return f"complex({number(v.real)}, {number(v.imag)})"
    if math.isnan(v):
        return "jnp.nan"
    if math.isinf(v):
        return "jnp.inf" if v > 0 else "-jnp.inf"
    return repr(v)


def nested(v) -> str:
    """Lists and tuples of numbers as source."""
    if isinstance(v, list):
        return "[" + ", ".join(nested(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(nested(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return number(v)


def literal(value, dtype: str) -> str:
    """A scalar literal of the spec (`reducer.levels.jaxpr.model.Literal`)."""
    if dtype.startswith("complex"):
        return f"{dtype_expr(dtype)}(complex({number(value[0])}, {number(value[1])}))"
    if dtype in ("float32", "int32", "bool"):
        return number(value)
    return f"{dtype_expr(dtype)}({number(value)})"


def array(values: list, shape, dtype: str) -> str:
    """An array with the given flat values (`reducer.levels.jaxpr.params.flat_values`)."""
    shape = tuple(shape)
    impl = key_impl(dtype)
    if impl is not None:
        data = f"jnp.asarray({nested(values)}, jnp.uint32).reshape({shape + tuple(impl.key_shape)!r})"
        return f"jax.random.wrap_key_data({data}, impl={impl.name!r})"
    if dtype.startswith("complex"):
        pairs = np.asarray(values, np.float64).reshape(-1, 2)
        return (f"(jnp.asarray({nested(pairs[:, 0].tolist())}) + 1j * jnp.asarray({nested(pairs[:, 1].tolist())}))"
                f".astype({dtype_expr(dtype)}).reshape({shape!r})")
    return f"jnp.asarray({nested(list(values))}, {dtype_expr(dtype)}).reshape({shape!r})"


def filled(shape, dtype: str, fill) -> str:
    """An array of one value: `jnp.ones(…)`, `jnp.zeros(…)`, `jnp.full(…)`; a PRNG key array from key data."""
    shape = tuple(shape)
    impl = key_impl(dtype)
    if impl is not None:
        data = f"jnp.full({shape + tuple(impl.key_shape)!r}, {int(fill)}, jnp.uint32)"
        return f"jax.random.wrap_key_data({data}, impl={impl.name!r})"
    if not shape and dtype == "bool":
        return repr(bool(fill))  # a mask of one value, as a user writes it: `jnp.where(False, …)`
    call = {0: "jnp.zeros", 1: "jnp.ones"}.get(fill)
    return f"{call}({shape!r}, {dtype_expr(dtype)})" if call else \
        f"jnp.full({shape!r}, {number(fill)}, {dtype_expr(dtype)})"


class Spelling:
    """Primitive parameters as source; `imports` gathers what they need besides jax, jnp, lax, np."""

    def __init__(self):
        self.imports: set[str] = set()

    def _class(self, cls) -> str:
        from jax import lax

        if getattr(lax, cls.__name__, None) is cls:
            return f"lax.{cls.__name__}"
        top = cls.__qualname__.split(".")[0]
        self.imports.add(f"from {cls.__module__} import {top}")
        return cls.__qualname__

    def value(self, v) -> str:
        from jax._src import core
        from jax._src.random import prng

        if isinstance(v, enum.Enum):
            return f"{self._class(type(v))}.{v.name}"
        if isinstance(v, np.dtype) or type(v).__name__ == "KeyTy":
            return dtype_expr(str(v))
        if isinstance(v, prng.PRNGImpl):
            self.imports.add("from jax._src.random.prng import prngs")
            return f"prngs[{v.name!r}]"
        if isinstance(v, core.Primitive):
            from reducer.levels.jaxpr.primitives import registry

            module, attr = registry()[v.name][1].split(":")
            self.imports.add(f"from {module} import {attr}")
            return attr
        if isinstance(v, core.ShapedArray):
            return f"jax.core.ShapedArray({tuple(v.shape)!r}, {dtype_expr(str(v.dtype))})"
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            fields = {k: getattr(v, k) for k in v._fields}
            return f"{self._class(type(v))}(" + ", ".join(f"{k}={self.value(x)}" for k, x in fields.items()) + ")"
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v) if f.init}
            return f"{self._class(type(v))}(" + ", ".join(f"{k}={self.value(x)}" for k, x in fields.items()) + ")"
        if isinstance(v, tuple):
            return "(" + ", ".join(self.value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if isinstance(v, np.generic):
            return number(v.item())
        if isinstance(v, np.ndarray):
            return f"np.asarray({nested(v.tolist())}, {dtype_expr(str(v.dtype))})"
        if isinstance(v, HostCallback):
            return self.host_function(v, flat=True)
        if callable(v) and hasattr(v, "__qualname__"):
            self.imports.add(f"from {v.__module__} import {v.__qualname__.split('.')[0]}")
            return v.__qualname__
        return number(v)

    def host_function(self, host: HostCallback, flat: bool) -> str:
        """A callback's host function: the library function (imported by name) or a stand-in returning
        zeros of the result shapes; `flat` returns a list of arrays, as a bound primitive calls it,
        else what the public call expects for its result shapes (one array, or a tuple)."""
        results = [f"np.zeros({tuple(r.shape)!r}, {dtype_expr(str(r.dtype))})" for r in host.results]
        if host.path:
            module, name = host.path.split(":")
            self.imports.add(f"from {module} import {name.split('.')[0]}")
            if flat:
                return f"lambda *xs: jax.tree_util.tree_leaves({name}(*xs))" if results else \
                    f"lambda *xs: [{name}(*xs), []][1]"
            if len(results) == 1:
                return name
            return f"lambda *xs: tuple({name}(*xs))" if results else f"lambda *xs: [{name}(*xs), None][1]"
        if results:
            self.imports.add("import numpy as np")
        if flat:
            return f"lambda *xs: [{', '.join(results)}]"
        if len(host.results) == 1:
            return f"lambda *xs: {results[0]}"
        return "lambda *xs: None" if not results else f"lambda *xs: ({', '.join(results)},)"

    def callback_call(self, p: str, ins: list[str], params: dict) -> str:
        """`jax.pure_callback(…)` / `io_callback(…)` for a callback equation, its results declared as
        one `jax.ShapeDtypeStruct` (one result), None (none) or a tuple of them."""
        host = params["callback"]
        shapes = [f"jax.ShapeDtypeStruct({tuple(r.shape)!r}, {dtype_expr(str(r.dtype))})" for r in host.results]
        declared = shapes[0] if len(shapes) == 1 else "None" if not shapes else f"({', '.join(shapes)},)"
        options = [f"{k}={self.value(params[k])}" for k in ("vmap_method", "ordered")
                   if params.get(k) not in (None, False)]  # what differs from the defaults
        call = "jax.pure_callback" if p == "pure_callback" else "io_callback"
        if p != "pure_callback":
            self.imports.add("from jax.experimental import io_callback")
        return f"{call}({', '.join([self.host_function(host, False), declared, *ins, *options])})"


def enzyme_wrapper(options: dict | None, imports: set) -> str:
    """`enzyme_jax_ir(…)` with the options `reducer.levels.jaxpr.params.enzyme_options` recorded."""
    options = options or {}
    args = []
    if options.get("argv"):
        args.append(f"argv={tuple(options['argv'])!r}")
    if "inner_jit" in options:
        args.append(f"inner_jit={options['inner_jit']!r}")
    if "passes" in options:
        imports.add("from enzyme_ad.jax.primitives import JaXPipeline")
        args.append(f"pipeline_options=JaXPipeline({options['passes']!r})")
    elif "pipeline" in options:
        imports.add(f"from enzyme_ad.jax.primitives import {options['pipeline']}")
        args.append(f"pipeline_options={options['pipeline']}()")
    return f"enzyme_jax_ir({', '.join(args)})"


CALLBACKS = ("pure_callback", "io_callback")  # primitives calling a host function
CUMULATIVE = ("cumsum", "cumprod")  # the jax.numpy functions staged as a `jit` of their one primitive
WHERE_PREP = ("convert_element_type", "broadcast_in_dim")  # what `jnp.where` does to its operands before selecting


def public_jit(e, ins: list[str]) -> str:
    """An inner `jit` (a `reducer.levels.jaxpr.model.Equation`) that is exactly what a `jax.numpy`
    function stages (`jnp.cumprod(x, axis=1)` is `jit[name=cumprod]` of one `cumprod` equation,
    `jnp.where(m, x, 0.0)` a `jit[name=_where]` converting, broadcasting and selecting) as that call;
    "" for any other."""
    body = e.subs[0]
    name = e.params.get("name")
    if name == "_where" and len(ins) == 3 and [q.primitive for q in body.eqns if q.primitive not in WHERE_PREP] == \
            ["select_n"] and body.eqns[-1].primitive == "select_n" and body.outputs == [body.eqns[-1].outputs[0].name] \
            and _trailing(body):
        return f"jnp.where({', '.join(ins)})"  # the operands it converts and broadcasts itself
    if name not in CUMULATIVE or len(ins) != 1 or len(body.eqns) != 1:
        return ""
    inner = body.eqns[0]
    params = inner.params
    if inner.primitive != name or params.get("reverse") or inner.inputs != [body.inputs[0].name] or \
            body.outputs != [inner.outputs[0].name] or body.inputs[0].dtype != inner.outputs[0].dtype:
        return ""
    return f"jnp.{name}({ins[0]}, axis={params['axis']})"


def _trailing(body) -> bool:
    """Whether every broadcast in `body` lines its operand up with the result's last axes, as NumPy's
    broadcasting does (under `vmap`, `jnp.where` of a mask per example broadcasts it along the first
    axis, which `jnp.where` of the batched operands would not)."""
    shapes = {v.name: v.shape for v in body.variables().values()}
    for q in body.eqns:
        if q.primitive == "broadcast_in_dim" and isinstance(q.inputs[0], str):
            rank, out = len(shapes.get(q.inputs[0], ())), len(q.params["shape"])
            if tuple(q.params["broadcast_dimensions"]) != tuple(range(out - rank, out)):
                return False
    return True


RANDOM = {  # primitive: (public function, its arguments from the equation's inputs and parameters)
    "random_wrap": lambda ins, p: f"jax.random.wrap_key_data({ins[0]}, impl={p['impl'].name!r})",
    "random_unwrap": lambda ins, p: f"jax.random.key_data({ins[0]})",
    "random_split": lambda ins, p: f"jax.random.split({ins[0]}, {tuple(p['shape'])!r})",
    "random_fold_in": lambda ins, p: f"jax.random.fold_in({ins[0]}, {ins[1]})",
    "random_bits": lambda ins, p: f"jax.random.bits({ins[0]}, {tuple(p['shape'])!r}, jnp.uint{p['bit_width']})",
    "random_seed": lambda ins, p: f"jax.random.key({ins[0]}, impl={p['impl'].name!r})",
}


def platform_index(platforms) -> str:
    """`platform_index` (the branch a platform takes, chosen when lowering) through `lax.platform_dependent`."""
    branches = []
    for k, group in enumerate(platforms):
        names = ["default"] if group is None else list(group)
        branches += [f"{name}=lambda: jnp.int32({k})" for name in names]
    return f"lax.platform_dependent({', '.join(branches)})"


def random_call(p: str, ins: list[str], params: dict) -> str:
    """A PRNG primitive as its `jax.random` function ("" for another primitive)."""
    return RANDOM[p](ins, params) if p in RANDOM else ""


#: primitives users call through jax.numpy (or jax.nn): on floating operands of one shape, with no
#: parameter set, the public call stages exactly that primitive, so it is spelled as the user wrote it
USERS_CALLS = {p: f"jnp.{p}" for p in ("sqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh",
                                       "sinh", "cosh", "abs", "sign", "floor", "ceil", "square", "cbrt", "exp2")}
USERS_CALLS.update(atan="jnp.arctan", asin="jnp.arcsin", acos="jnp.arccos", atanh="jnp.arctanh",
                   asinh="jnp.arcsinh", atan2="jnp.arctan2", max="jnp.maximum", min="jnp.minimum",
                   logistic="jax.nn.sigmoid")


def alike(p: str, shapes: list, variables: list[bool]) -> bool:
    """Whether the operands of a primitive `p`, of `shapes`, are one shape of variables (`variables`
    tells which are), so that a user's call stages it unchanged; for a scalar `where`, a literal mask
    or value too (`jnp.where(False, jnp.log(a), 0.0)` stages the same select)."""
    one = {tuple(s) for s in shapes}
    return len(one) == 1 and (all(variables) or p == "select_n" and one == {()} and any(variables[1:]))


def _one_shape(ins: list[str], in_dtypes: list[str], dtype: str, alike: bool) -> bool:
    """Whether the two operands `ins` are of the result's `dtype`, variables of one shape (`alike`)
    or a scalar variable and a scalar literal (which `**` stages as it is)."""
    return len(ins) == 2 and all(str(d) == dtype for d in in_dtypes) and (alike or any(i.isidentifier() for i in ins))


def users_call(p: str, ins: list[str], params: dict, dtype: str, in_dtypes: list[str], alike: bool) -> str:
    """The primitive `p` (on the operands `ins` of the dtypes `in_dtypes`, of one shape where `alike`,
    making a `dtype` result) as the jax.numpy call a user writes for it (`jnp.sqrt`, `jnp.where`,
    `x ** 2`), where that call stages it unchanged; "" otherwise."""
    floating = dtype.startswith(REAL_FLOATING)
    if p in USERS_CALLS and floating and alike and all(v is None for v in params.values()):
        return f"{USERS_CALLS[p]}({', '.join(ins)})"
    if p == "integer_pow" and floating and alike and params.get("y") in (2, 3):
        return f"{ins[0]} ** {params['y']}"
    if p == "pow" and floating and _one_shape(ins, in_dtypes, dtype, alike):  # `a ** 0.5`: a Python float too
        return " ** ".join(i if re.fullmatch(r"[\w.]+", i) else f"({i})" for i in ins)
    if p == "select_n" and len(ins) == 3 and alike and in_dtypes[0] == "bool":
        return f"jnp.where({ins[0]}, {ins[2]}, {ins[1]})"
    return ""
