"""The fix of a non-finite value, run inside a candidate's own process: one JAX operation made safe
wherever the program (or a library it calls) uses it, so that a candidate can be asked whether its
NaN or Inf goes away once that operation no longer makes one.

`make_safe("sqrt", "forward")` replaces a non-finite result that the operation makes from finite
inputs by 0 (the forward value alone). `make_safe("log", "value-only")` keeps such a result and
takes its derivative away: what the program then reads of it is the value made forward alone (the
`-inf` of `log(0)`, not the `+inf` of its derivative beside it). `make_safe("exp", "underflow")`
replaces an exact 0 made from inputs that are not 0 by a small number well above underflow (the
square root of the smallest normal one, 1e-19 in float32, so that the softmax's division after its
`exp` does not round it to 0 again, as XLA flushes subnormal numbers): what made the 0 that `log`
turned into `-inf`; of a product of many factors (`reduce_prod`, a matrix product: a likelihood's
probabilities multiplied step by step), an exact 0 where no factor of it is 0.
`make_safe("exp", "float64")` evaluates the operation in float64 where its inputs are narrower (a
Flax layer's float32 parameters stay float32 in a program made float64), its result kept float64, so
that its overflow goes away alone (a cast to float32 of a float64 value, `convert_element_type`, is
left undone: `jnp.sum` casts its float64 sum back to its input's float32);
`make_safe("exp", "float32")` does so too, and then makes each of
its values beyond float32's range infinite, as float32 would, so that its own overflow comes back
alone: not one of an operation after it, which its float64 values reach either way
(`reducer.faults.float64_fix`).
`make_safe("sqrt", "derivative")` is the inner `where` users are told to write: where the
operation's value or its derivative is not finite at finite inputs, the operation is evaluated at a
safe point instead (`sqrt(where(x == 0, 1, x))`), its value there replaced by the original value
when that is finite (0 for `sqrt(0)`), so that neither the value nor the derivative is infinite.
`make_safe("sqrt", "derivative@edge")` does so only at the points of one class (`POINTS`): the edge
of the operation's domain, where its value is finite and its derivative infinite (`sqrt(0)`); a pole,
where its value is infinite (`log(0)`, `1 / 0`), or NaN at a division's (`0 / 0`); the outside of its
domain, where its value is NaN (`sqrt(-1)`, `log(-1)`). So a fix tells the edge of a domain from
its outside, and a `where` around `log(0)` from one around `log(-1)`.
All three act on the primitive itself (`lax.sqrt_p.bind`), so that `jnp.linalg.norm`, `jax.nn.softmax`, a
Flax layer and a jitted step are all fixed alike, under `jit`, `grad`, `jvp` and `vmap`: where the
program binds it, not where JAX's own derivative, transpose or lowering rules do (`_inside_rule`).
An operation that broadcasts a scalar or a size-1 axis itself (`z / norm[:, None]`) is fixed on its
inputs broadcast to its result's shape.

The candidate's check runs as before; a candidate whose failure comes from elsewhere (a constant, a
random draw, NumPy alone, another operation) still fails with the fix, and is not the failure.
"""
from __future__ import annotations

import functools
import sys
import threading

from reducer.faults import within_call

#: primitive names by the names a program or a traceback uses for them
ALIASES = {"arccos": ("acos",), "arcsin": ("asin",), "arctanh": ("atanh",), "arccosh": ("acosh",),
           "divide": ("div",), "true_divide": ("div",), "reciprocal": ("div", "integer_pow"),
           "power": ("pow", "integer_pow"), "norm": ("sqrt",), "log10": ("log",), "log2": ("log",),
           "logit": ("log", "div"), "xlogy": ("log", "mul"), "entr": ("log", "mul"), "rsqrt": ("rsqrt",),
           "exp": ("exp",), "softmax": ("exp",), "logsumexp": ("exp", "log"), "var": ("sqrt",),
           "std": ("sqrt",), "arctan2": ("atan2",)}
#: a point inside the operation's domain, with a finite derivative there (1.0 when not listed)
SAFE_POINT = {"acos": 0.0, "asin": 0.0, "atanh": 0.0, "acosh": 2.0}
FORWARD, DERIVATIVE, UNDERFLOW, VALUE_ONLY = "forward", "derivative", "underflow", "value-only"
#: the operation's own overflow of float32, or the operation in float64, in a program made float64
#: (`reducer.faults.float64_fix`)
NARROW, WIDEN = "float32", "float64"
#: the classes of point a DERIVATIVE fix may be kept to (`derivative@edge`): the operation's value
#: finite there (its derivative not), infinite (a pole), or NaN (outside its domain)
POINTS = ("edge", "pole", "outside")
#: operations whose NaN from finite inputs is at a pole, as they have no outside (`0 / 0`)
NO_OUTSIDE = ("div",)
#: operations whose non-finite value from finite inputs is an overflow, never a point at the edge of
#: their domain or outside it: no inner `where` is their fix (`reducer.faults.float64_fix` is)
OVERFLOW_ONLY = ("exp", "exp2", "expm1", "cosh", "sinh")
#: operations that round a value too small for its type to exactly 0 (`exp(-200.0)` in float32, a
#: product of many probabilities)
UNDERFLOWING = ("exp", "mul", "div", "integer_pow", "pow", "reduce_prod", "dot_general")
#: of those, the products of many factors: not elementwise
PRODUCTS = ("reduce_prod", "dot_general")
#: operations whose float32 result is rounded, in the order a cancellation's inputs are most often
#: made (a square, a product, a sum, a mean): each evaluated in float64 (WIDEN), the value a later
#: subtraction makes of them keeps its sign (`reducer.faults.cause`: a one-pass variance
#: `mean(x ** 2) - mean(x) ** 2` below 0 under a `sqrt`)
ROUNDING = ("integer_pow", "square", "mul", "dot_general", "reduce_sum", "convert_element_type", "div", "add",
            "sub", "exp", "log", "pow", "tanh", "logistic", "log1p", "expm1", "sin", "cos")
#: of those, the cast that `jnp.sum` and `jnp.mean` end with (their float32 result type): in float64, a
#: float64 value is kept as it is where it would be narrowed
CAST = "convert_element_type"

_busy = threading.local()
#: the operations a WIDEN fix evaluated in float64 in this process, by name (`say_widened`)
_widened: set[str] = set()
#: the line, run before a program's first, that prints them when it exits (`WIDENED` names the line)
SAY_WIDENED = "from reducer.faults.safe_ops import say_widened as _reducer_said; _reducer_said()"
WIDENED = "reducer-widened:"


def primitives(name: str) -> tuple[str, ...]:
    """The primitive names an operation's name stands for (`arccos` → `acos`)."""
    return ALIASES.get(name, (name,))


def _primitive(name: str):
    from jax._src.lax import lax, special

    return getattr(lax, f"{name}_p", None) or getattr(special, f"{name}_p", None)


def known(name: str) -> bool:
    """Whether `make_safe` can fix the operation `name`."""
    return all(_primitive(p) is not None for p in primitives(name))


def make_safe(name: str, how: str, outside: str = ""):
    """Patch the primitives of `name` (see the module docstring); `how`: FORWARD, DERIVATIVE, UNDERFLOW,
    VALUE_ONLY, NARROW or WIDEN, or DERIVATIVE kept to one class of point of `POINTS` (`derivative@edge`);
    with `outside`, the name of a public function of JAX's, not where that function binds them (its
    body: `bessel_jn`'s recurrence), so that a fix can be asked whether it acts only inside the call.
    Returns what undoes it, for a process that goes on (a worker replaying calls)."""
    if how.partition("@")[2] not in ("", *POINTS):
        raise ValueError(f"no class of point named {how.partition('@')[2]!r}")
    patched, unscoped = [], within_call.scoped(outside) if outside else (lambda: None)
    for prim_name in primitives(name):
        prim = _primitive(prim_name)
        if prim is None:
            raise ValueError(f"no JAX primitive named {prim_name!r}")
        patched.append(prim)
        prim.bind = _patched(prim, prim.bind, SAFE_POINT.get(prim_name, 1.0), how, outside)

    def undo() -> None:
        for prim in patched:
            prim.__dict__.pop("bind", None)
        unscoped()

    return undo


def where_bound(prim, bind, instead, outside: str = "", within=None):
    """`prim`'s `bind`, with `instead(args, params)` run in its place where the program binds it: not
    inside JAX's own rules (`_inside_rule`), nor inside the work of another operation patched so, nor
    inside JAX's public function named `outside` (where one is named: there `within(args, params)`
    runs in its place where given, else `bind`)."""
    def patched(*args, **params):
        if getattr(_busy, "on", False) or prim.multiple_results or _inside_rule():
            return bind(*args, **params)
        inside = bool(outside) and within_call.inside()
        if inside and within is None:
            return bind(*args, **params)
        _busy.on = True
        try:
            return (within if inside else instead)(args, params)
        finally:
            _busy.on = False

    return patched


def _patched(prim, bind, safe: float, how: str, outside: str = ""):
    def instead(args, params):
        if how == UNDERFLOW and prim.name in PRODUCTS:
            return _product_underflow(prim.name, bind, args, params)
        if how == WIDEN and prim.name == CAST:
            return _kept_wide(bind, args, params)
        if how in (NARROW, WIDEN):  # an overflow of float32 brought back, or taken away, alone
            return _evaluated_in(prim.name, bind, args, params, how)
        return _safe(bind, args, params, safe, how, prim.name in NO_OUTSIDE)

    def kept_wide(args, params):  # float32's overflow brought back but in the call, where the operation stays
        return _evaluated_in(prim.name, bind, args, params, WIDEN)  # float64 on float32 inputs too (`poch(r32, y)`)

    return where_bound(prim, bind, instead, outside, kept_wide if how == NARROW else None)


def say_widened() -> None:
    """Print, when the process exits, the operations a WIDEN fix evaluated in float64 (on their narrow
    floating inputs): the ones the program binds, of the many it was given (`widened_in`)."""
    import atexit

    atexit.register(lambda: print(WIDENED, " ".join(sorted(_widened)), file=sys.stderr, flush=True))


def widened_here() -> set[str]:
    """The operations a WIDEN fix evaluated in float64 in this process since `forget_widened`."""
    return set(_widened)


def forget_widened() -> None:
    _widened.clear()


def widened_in(output: str) -> set[str] | None:
    """The operations a run's output says a WIDEN fix evaluated in float64 (`say_widened`); None when
    it does not say."""
    said = [line for line in output.splitlines() if line.startswith(WIDENED)]
    return set(said[-1][len(WIDENED):].split()) if said else None


def line(name: str, how: str, outside: str = "") -> str:
    """The statement, run before a program's first, that makes `name` safe (`make_safe`) in its process
    (`outside` the public function of that name, where one is named)."""
    scope = f", outside={outside!r}" if outside else ""
    return f"from reducer.faults.safe_ops import make_safe as _reducer_safe; _reducer_safe({name!r}, {how!r}{scope})"


def _evaluated_in(name: str, bind, args, params, how: str):
    """The operation evaluated in float64 on its floating inputs, its result kept float64 (WIDEN), its
    values beyond float32's range made infinite as float32 would make them (NARROW)."""
    import jax.numpy as jnp
    from jax import lax

    narrow = [_narrow(jnp.result_type(a)) for a in args]
    if any(narrow):
        _widened.add(name)
    out = bind(*[lax.convert_element_type(a, jnp.float64) if n else a for a, n in zip(args, narrow)], **params)
    if how == WIDEN or not jnp.issubdtype(out.dtype, jnp.floating):
        return out
    beyond = lax.is_finite(out) & (lax.abs(out) > float(jnp.finfo(jnp.float32).max))
    return lax.select(beyond, lax.stop_gradient(jnp.sign(out) * jnp.inf), out)


def _kept_wide(bind, args, params):
    """A cast of a float64 value to a narrower float left undone (`CAST` evaluated in float64)."""
    import jax.numpy as jnp

    if jnp.result_type(args[0]) == jnp.float64 and _narrow(params.get("new_dtype")):
        _widened.add(CAST)
        return args[0]
    return bind(*args, **params)


def _narrow(dtype) -> bool:
    """Whether `dtype` is a float narrower than float64 (float32, float16, bfloat16)."""
    import jax.numpy as jnp

    return dtype is not None and jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits < 64


def _safe(bind, args, params, safe: float, how: str, no_outside: bool = False):
    import jax
    import jax.numpy as jnp
    from jax import lax

    raw = bind(*[lax.stop_gradient(a) for a in args], **params)
    shape = jnp.shape(raw)
    floats = [k for k, a in enumerate(args) if jnp.issubdtype(jnp.result_type(a), jnp.inexact)]
    if not jnp.issubdtype(raw.dtype, jnp.inexact) or not _elementwise(args, floats, shape):
        return bind(*args, **params)  # not elementwise on floating values: left as it is
    # a scalar or a size-1 axis is broadcast by the operation itself (`z / norm[:, None]`)
    args = [jnp.broadcast_to(a, shape) if k in floats else a for k, a in enumerate(args)]
    inputs_finite = jnp.ones(shape, bool)
    for k in floats:
        inputs_finite = inputs_finite & lax.is_finite(args[k])
    bad = ~lax.is_finite(raw)
    how, _, point = how.partition("@")
    if how == FORWARD:
        return lax.select(bad & inputs_finite, jnp.zeros_like(raw), bind(*args, **params))
    if how == VALUE_ONLY:  # the derivative taken at a safe point, where it is then dropped
        held = bad & inputs_finite
        return lax.select(held, lax.stop_gradient(raw), bind(*_moved(args, floats, held, shape, safe), **params))
    if how == UNDERFLOW:  # an exact 0 from inputs that are not 0: a small number well above underflow
        nonzero = jnp.ones(shape, bool)
        for k in floats:
            nonzero = nonzero & (args[k] != 0)
        small = jnp.full(shape, float(jnp.finfo(raw.dtype).tiny) ** 0.5, raw.dtype)
        return lax.select((raw == 0) & nonzero & inputs_finite, small, bind(*args, **params))
    infinite = jnp.zeros(shape, bool)  # where a derivative is infinite, not NaN
    for k in floats:
        def one(x, k=k):
            return bind(*[x if j == k else lax.stop_gradient(a) for j, a in enumerate(args)], **params)

        x = lax.stop_gradient(args[k])
        derivative = jax.jvp(one, (x,), (jnp.ones_like(x),))[1]
        bad, infinite = bad | ~lax.is_finite(derivative), infinite | jnp.isinf(derivative)
    bad = bad & inputs_finite
    if point:
        bad = bad & _of_class(raw, point, no_outside, infinite)
    kept = lax.stop_gradient(lax.select(lax.is_finite(raw), raw, jnp.zeros_like(raw)))
    return lax.select(bad, kept, bind(*_moved(args, floats, bad, shape, safe), **params))


def _product_underflow(name: str, bind, args, params):
    """A product of many factors (`reduce_prod`, `dot_general`) with an exact 0 where none of the
    factors of a term is 0 (each of a `reduce_prod`'s, or of one of a matrix product's terms) replaced
    by a small number well above underflow, as `UNDERFLOW` does for one operation's."""
    import jax.numpy as jnp
    from jax import lax

    raw = bind(*[lax.stop_gradient(a) for a in args], **params)
    if not jnp.issubdtype(raw.dtype, jnp.inexact):
        return bind(*args, **params)
    nonzero = [(a != 0).astype(raw.dtype) for a in args]  # a term's factors all nonzero: its count is 1
    terms = bind(*nonzero, **params) if name == "dot_general" else jnp.all(args[0] != 0, axis=params["axes"])
    small = jnp.full(raw.shape, float(jnp.finfo(raw.dtype).tiny) ** 0.5, raw.dtype)
    return lax.select((raw == 0) & (terms > 0), small, bind(*args, **params))


def _of_class(raw, point: str, no_outside: bool, infinite):
    """Where the operation's value `raw` is of the class `point` (`POINTS`); a NaN is at a pole for an
    operation with no outside (`no_outside`). At an edge a derivative is `infinite` (`sqrt`'s at 0,
    `x ** 0.3`'s): a NaN derivative of a finite value is no edge of the mathematics but JAX's rule
    multiplying an infinity by 0 (`x ** 0.0` at 0, whose derivative is 0)."""
    import jax.numpy as jnp
    from jax import lax

    if point == "edge":
        return lax.is_finite(raw) & infinite
    if point == "pole":
        return jnp.isinf(raw) | (jnp.isnan(raw) if no_outside else False)
    return jnp.isnan(raw) & (not no_outside)


def _elementwise(args, floats: list[int], shape) -> bool:
    """Whether the operation maps its floating inputs element by element onto a result of `shape`
    (each input of that shape, or broadcast to it: a scalar, a size-1 axis)."""
    import numpy as np

    try:
        return all(np.broadcast_shapes(np.shape(args[k]), shape) == tuple(shape) for k in floats)
    except ValueError:
        return False


def _inside_rule() -> bool:
    """Whether the caller is one of JAX's own rules, not the program: a derivative rule (`sqrt`'s
    tangent divides by its result), a transpose, or a lowering through other operations
    (`integer_pow` of a negative power is a `div`). The program's operations were made safe where
    it traced them; fixing the rules' would change derivatives it never computed (a tangent's
    `div` made safe turns a `select` on the tangent into one JAX cannot transpose), or recurse
    (the derivative of `div` is an `integer_pow`, lowered by a `div` again)."""
    frame = sys._getframe(2)
    rules = _rules()
    while frame is not None:
        if frame.f_code in rules:
            return True
        frame = frame.f_back
    return False


@functools.cache
def _rules() -> frozenset:
    """The code of JAX's rule runners: `_inside_rule` looks for them on the stack."""
    from jax._src.interpreters import ad, mlir

    found = [mlir.lower_fun(_rules).__code__, ad.JVPTrace.process_primitive.__code__, ad.backward_pass.__code__]
    found += [getattr(ad, name).__code__ for name in ("backward_pass3",) if hasattr(ad, name)]
    found += [ad.LinearizeTrace.process_primitive.__code__] if hasattr(ad, "LinearizeTrace") else []
    return frozenset(found)


def _moved(args, floats: list[int], where, shape, safe: float) -> list:
    """`args` with the floating ones at `safe` where `where` holds (the inner `where`)."""
    import jax.numpy as jnp
    from jax import lax

    return [lax.select(where, jnp.full(shape, safe, jnp.result_type(a)), a) if k in floats else a
            for k, a in enumerate(args)]
